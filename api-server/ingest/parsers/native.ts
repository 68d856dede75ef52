// `native`: blockfeed's own NDJSON, one event a line (README "Ingesting sensor logs"):
// {"ts","src_ip","dst_port","service","source","sensor","command"} with optional proto, username, id, action.
import { SOURCES, type Source } from '../../../common/vocabulary.ts';
import type { Action } from '../../classify/classification.ts';
import {
  FieldError, guarded, optionalPort, optionalText, parseJsonObject, requireAddress, requireSensor, requireTime, serviceFor, withId,
  type LineParser, type ParserOptions,
} from '../event.ts';

export function nativeParser(options: ParserOptions = {}): LineParser {
  const line = (text: string) =>
    guarded(() => {
      const o = parseJsonObject(text);
      const source = o.source ?? 'honeypot';
      if (typeof source !== 'string' || !(SOURCES as readonly string[]).includes(source)) {
        throw new FieldError(`source ${JSON.stringify(source)} is not one of ${SOURCES.join(', ')}`);
      }
      const dstPort = optionalPort(o.dst_port, 'dst_port');
      const username = optionalText(o.username, 'username');
      const command = optionalText(o.command, 'command');
      let action: Action = command !== null ? 2 : username !== null ? 1 : 0;
      if (o.action !== undefined) {
        if (o.action !== 0 && o.action !== 1 && o.action !== 2) throw new FieldError('action must be 0, 1 or 2');
        action = o.action;
      }
      if (source === 'telescope') action = 0; // the telescope only sees probes
      return {
        event: withId(
          {
            ts: requireTime(o.ts, 'ts'),
            src: requireAddress(o.src_ip, 'src_ip'),
            dstPort,
            service: serviceFor(o.service, dstPort, 'service'),
            proto: optionalText(o.proto, 'proto'),
            source: source as Source,
            sensor: requireSensor(o.sensor, options.sensor, 'sensor'),
            action,
            username,
            command,
          },
          o.id,
        ),
      };
    });
  return { line };
}
