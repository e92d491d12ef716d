/** The JSON body as a record, or a failed test. */
export const asRecord = (value: unknown): Record<string, unknown> => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error(`expected a JSON object, got ${JSON.stringify(value)}`)
  }
  return Object.fromEntries(Object.entries(value))
}
