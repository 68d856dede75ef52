// Unprivileged system users for programs that refuse to run as root (PostgreSQL, the honeypots the tests
// run), and whether such a user can reach a file.
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import path from 'node:path';

export interface SystemUser {
  uid: number;
  gid: number;
}

// groupadd and useradd live in /usr/sbin, which a minimal PATH (a clean CI environment, cron) may leave out.
const WITH_SBIN = { ...process.env, PATH: `${process.env.PATH ?? ''}:/usr/sbin:/sbin` };

/** The system user `name` with a group of the same name, made (no home, no login shell) if missing. Needs root to make it. */
export function systemUser(name: string): SystemUser {
  const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    try {
      execFileSync('groupadd', ['--system', name], { stdio: 'ignore', env: WITH_SBIN });
    } catch {
      /* the group may exist without the user */
    }
    execFileSync('useradd', ['--system', '--gid', name, '--no-create-home', '--shell', '/usr/sbin/nologin', name], { stdio: 'ignore', env: WITH_SBIN });
    return { uid: id('-u'), gid: id('-g') };
  }
}

/** The first parent of `file` that `uid` cannot traverse (neither its owner nor allowed by o+x), if any. */
export function blockingParent(file: string, uid: number): { dir: string; mode: number } | undefined {
  for (let p = path.dirname(file); ; p = path.dirname(p)) {
    const st = statSync(p);
    if (st.uid !== uid && (st.mode & 0o001) === 0) return { dir: p, mode: st.mode & 0o777 };
    if (p === path.dirname(p)) return undefined;
  }
}
