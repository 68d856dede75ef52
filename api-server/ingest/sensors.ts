// Sensor names of one writer, numbered locally in the order they are met (0, 1, 2, …) so that the per-event
// work (rollups, facts) handles small integers, never strings; and mapped to `sensors.id` once the writer has
// registered them. The byte-level parsers find a name from its bytes without making a string per line.

const RECENT_NAMES = 16;

export class SensorNames {
  private readonly names: string[] = [];
  private readonly byName = new Map<string, number>();
  /** Local number → sensors.id (-1 until registered). */
  private dbIds = new Int32Array(16).fill(-1);
  // Names found from bytes lately, as bytes: a log's lines come from a few sensors, so a name is nearly always
  // found by comparing bytes, without making a string.
  private readonly recentBytes: Buffer[] = [];
  private readonly recentLocal: number[] = [];
  private nextRecent = 0;

  /** The local number of `name`, numbering it if new. */
  local(name: string): number {
    let n = this.byName.get(name);
    if (n === undefined) {
      n = this.names.length;
      this.names.push(name);
      this.byName.set(name, n);
      if (n >= this.dbIds.length) {
        const bigger = new Int32Array(this.dbIds.length * 2).fill(-1);
        bigger.set(this.dbIds);
        this.dbIds = bigger;
      }
    }
    return n;
  }

  /** The local number of the name spelled by the ASCII bytes buf[start, end). */
  localOfBytes(buf: Buffer, start: number, end: number): number {
    const length = end - start;
    for (let r = 0; r < this.recentBytes.length; r++) {
      const bytes = this.recentBytes[r] as Buffer;
      if (bytes.length !== length) continue;
      let same = true;
      for (let i = 0; same && i < length; i++) same = buf[start + i] === bytes[i];
      if (same) return this.recentLocal[r] as number;
    }
    const name = buf.toString('latin1', start, end);
    const local = this.local(name);
    const r = this.nextRecent;
    this.recentBytes[r] = Buffer.from(name, 'latin1');
    this.recentLocal[r] = local;
    this.nextRecent = (r + 1) % RECENT_NAMES;
    return local;
  }

  /** sensors.id of a registered name. */
  dbId(local: number): number {
    return this.dbIds[local] as number;
  }

  /** Names not registered yet. */
  unregistered(): string[] {
    const out: string[] = [];
    for (let i = 0; i < this.names.length; i++) if ((this.dbIds[i] as number) < 0) out.push(this.names[i] as string);
    return out;
  }

  register(name: string, dbId: number): void {
    this.dbIds[this.local(name)] = dbId;
  }
}
