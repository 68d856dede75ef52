// `telescope-csv`: a header `ts,src_ip,dst_port,proto` (any order; an optional `sensor` column), then one
// observation a row. Every row is a `telescope` probe. Fields hold no commas, so no quoting is needed;
// quoted fields are unquoted all the same.
import {
  FieldError, guarded, optionalPort, optionalText, requireAddress, requireSensor, requireTime, serviceFor, withId,
  type LineParser, type ParserOptions,
} from '../event.ts';

const REQUIRED = ['ts', 'src_ip', 'dst_port', 'proto'] as const;

function fields(line: string): string[] {
  return line.split(',').map((f) => {
    const t = f.trim();
    return t.length >= 2 && t.startsWith('"') && t.endsWith('"') ? t.slice(1, -1) : t;
  });
}

export function telescopeCsvParser(options: ParserOptions = {}): LineParser {
  let columns: Map<string, number> | undefined;
  const line = (text: string) =>
    guarded(() => {
      if (!columns) {
        const names = fields(text).map((n) => n.toLowerCase());
        const missing = REQUIRED.filter((r) => !names.includes(r));
        if (missing.length) throw new FieldError(`header must name ${REQUIRED.join(',')} (missing ${missing.join(', ')})`);
        columns = new Map(names.map((n, i) => [n, i]));
        return { skip: true };
      }
      const f = fields(text);
      if (f.length < columns.size) throw new FieldError(`expected ${columns.size} fields, found ${f.length}`);
      const at = (name: string) => {
        const i = columns?.get(name);
        return i === undefined ? undefined : f[i];
      };
      const dstPort = optionalPort(at('dst_port'), 'dst_port');
      const proto = optionalText(at('proto')?.toLowerCase() || null, 'proto');
      return {
        event: withId({
          ts: requireTime(at('ts'), 'ts'),
          src: requireAddress(at('src_ip'), 'src_ip'),
          dstPort,
          service: serviceFor(undefined, dstPort, 'service'),
          proto,
          source: 'telescope',
          sensor: requireSensor(at('sensor'), options.sensor ?? 'telescope', 'sensor'),
          action: 0,
          username: null,
          command: null,
        }),
      };
    });
  return { line };
}
