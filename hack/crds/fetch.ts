// `make k8s-crds`: downloads the pinned modules of enforcement-points.ts through the Go module proxy (`go mod
// download`, which checks each module against go.sum's checksum database) and writes their CRDs, one file per
// CRD, to .cache/crds/<id>/. A no-op when that directory exists; needs only Go (found as hack/k8s-bin/build.sh
// finds or fetches it).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import { ENFORCEMENT_POINT_CRDS, enforcementPointCrdDir } from './enforcement-points.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** go on PATH, in the usual install directories, or the one hack/k8s-bin/build.sh fetched into .cache/go. */
function findGo(): string {
  const candidates = ['go', '/usr/local/go/bin/go', '/usr/lib/go/bin/go'];
  const cached = path.join(ROOT, '.cache/go');
  if (existsSync(cached)) for (const d of readdirSync(cached).sort().reverse()) candidates.push(path.join(cached, d, 'bin/go'));
  for (const go of candidates) {
    try {
      execFileSync(go, ['version'], { stdio: 'ignore' });
      return go;
    } catch {
      // not this one
    }
  }
  throw new Error('k8s-crds: no Go toolchain found (PATH, /usr/local/go, .cache/go): run `make k8s-bin` first, or install Go');
}

function fetch(): void {
  const target = enforcementPointCrdDir(ROOT);
  if (existsSync(target)) return;
  const go = findGo();
  const work = mkdtempSync(path.join(tmpdir(), 'blockfeed-crds-'));
  const out = path.join(work, 'out');
  mkdirSync(out);
  try {
    for (const pin of ENFORCEMENT_POINT_CRDS) {
      const answer = execFileSync(go, ['mod', 'download', '-json', `${pin.module}@${pin.version}`], { cwd: work, encoding: 'utf8', env: { ...process.env, GOFLAGS: '' } });
      const info = JSON.parse(answer) as { Dir?: string; Error?: string };
      if (!info.Dir) throw new Error(`k8s-crds: go mod download ${pin.module}@${pin.version}: ${info.Error ?? 'no directory'}`);
      let written = 0;
      for (const file of pin.files) {
        for (const doc of parseAllDocuments(readFileSync(path.join(info.Dir, file), 'utf8'))) {
          const crd = doc.toJS() as { kind?: string; metadata?: { name?: string } } | null;
          const name = crd?.metadata?.name;
          if (crd?.kind !== 'CustomResourceDefinition' || !name || (pin.crds && !pin.crds.includes(name))) continue;
          writeFileSync(path.join(out, `${name}.yaml`), `# ${pin.module}@${pin.version} ${file}\n${stringify(crd, { lineWidth: 0 })}`);
          written++;
        }
      }
      if (written !== (pin.crds?.length ?? pin.files.length)) throw new Error(`k8s-crds: ${pin.module}@${pin.version}: found ${written} CRDs, expected ${pin.crds?.length ?? pin.files.length}`);
      process.stderr.write(`k8s-crds: ${pin.module}@${pin.version}: ${written} CRDs\n`);
    }
    mkdirSync(path.dirname(target), { recursive: true });
    renameSync(out, target);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

fetch();
