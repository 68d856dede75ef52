/**
 * An error caused by the user's input or environment (bad flag, bad config, port in use). The CLI prints its
 * message as one line, without a stack, and exits with `exitCode`.
 */
export class UserError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1, options?: ErrorOptions) {
    super(message, options);
    this.name = 'UserError';
    this.exitCode = exitCode;
  }
}
