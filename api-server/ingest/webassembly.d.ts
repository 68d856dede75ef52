// TypeScript declares WebAssembly only in its DOM and web-worker libraries; Node has it all the same. What the
// JSON scanner (flat-json-bytes.ts) uses of it:
declare namespace WebAssembly {
  class Module {
    constructor(bytes: Uint8Array);
  }
  class Instance {
    constructor(module: Module, imports?: object);
    readonly exports: Record<string, unknown>;
  }
  class Memory {
    readonly buffer: ArrayBuffer;
  }
  class Global {
    readonly value: unknown;
  }
}
