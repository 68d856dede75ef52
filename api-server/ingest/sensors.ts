// Sensor names of one writer, numbered locally in the order they are met (0, 1, 2, …) so that the per-event
// work (rollups, facts) handles small integers, never strings; and mapped to `sensors.id` once the writer has
// registered them. The byte-level parsers find a name from its bytes without making a string per line.

export class SensorNames {
  private readonly names: string[] = [];
  private readonly byName = new Map<string, number>();
  /** Local number → sensors.id (-1 until registered). */
  private dbIds = new Int32Array(16).fill(-1);
  // The last name found from bytes: consecutive lines of a log mostly come from the same sensor.
  private lastBytes = Buffer.alloc(0);
  private lastLocal = -1;

  get size(): number {
    return this.names.length;
  }

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
    const last = this.lastBytes;
    if (end - start === last.length) {
      let same = true;
      for (let i = 0; same && i < last.length; i++) same = buf[start + i] === last[i];
      if (same) return this.lastLocal;
    }
    const name = buf.toString('latin1', start, end);
    this.lastLocal = this.local(name);
    this.lastBytes = Buffer.from(name, 'latin1');
    return this.lastLocal;
  }

  name(local: number): string {
    return this.names[local] as string;
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
