export declare function toBigIntLE(buf: Buffer): bigint
export declare function toBigIntBE(buf: Buffer): bigint
export declare function toBufferLE(num: bigint, width: number): Buffer
export declare function toBufferBE(num: bigint, width: number): Buffer
