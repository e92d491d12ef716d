import type { OperationStatus } from "../src/stores/custody-store.js"

// the API's view of a sweep is declared in the kernel's domain (the API declaration and the client import it)
export { SweepOperation, SweepRequest } from "../src/domain/sweep.js"

export const isFinished = (status: OperationStatus) => status === "COMPLETED" || status === "FAILED"
