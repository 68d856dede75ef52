// Sensor names of one writer, numbered locally in the order they are met (0, 1, 2, …) so that the per-event
// work (rollups, facts) handles small integers, never strings; and mapped to `sensors.id` once the writer has
// registered them.
export class SensorNames {
  private readonly names: string[] = [];
  private readonly byName = new Map<string, number>();
  /** Local number → sensors.id (-1 until registered). */
  private readonly dbIds: number[] = [];

  /** The local number of `name`, numbering it if new. */
  local(name: string): number {
    let n = this.byName.get(name);
    if (n === undefined) {
      n = this.names.push(name) - 1;
      this.dbIds.push(-1);
      this.byName.set(name, n);
    }
    return n;
  }

  /** sensors.id of a registered name. */
  dbId(local: number): number {
    return this.dbIds[local] as number;
  }

  /** Names not registered yet. */
  unregistered(): string[] {
    return this.names.filter((_, i) => (this.dbIds[i] as number) < 0);
  }

  register(name: string, dbId: number): void {
    this.dbIds[this.local(name)] = dbId;
  }
}
