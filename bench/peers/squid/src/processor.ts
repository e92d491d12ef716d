import { assertNotNull } from '@subsquid/util-internal'
import {
    BlockHeader,
    DataHandlerContext,
    EvmBatchProcessor,
    EvmBatchProcessorFields,
    Log as _Log,
    Transaction as _Transaction,
} from '@subsquid/evm-processor'
import * as token from './abi/token'

// The runner (bench/e2e.ts) passes the anvil node, the token and the block range it measures.
export const TOKEN_ADDRESS = assertNotNull(process.env.TOKEN_ADDRESS, 'TOKEN_ADDRESS is not set').toLowerCase()

export const processor = new EvmBatchProcessor()
    // RPC only: a local anvil chain has no SQD Network gateway
    .setRpcEndpoint(assertNotNull(process.env.RPC_ANVIL_HTTP, 'RPC_ANVIL_HTTP is not set'))
    // the runner mines enough blocks after the range that every block of it is final at this depth
    .setFinalityConfirmation(Number(assertNotNull(process.env.FINALITY_CONFIRMATION, 'FINALITY_CONFIRMATION is not set')))
    .setBlockRange({
        from: Number(assertNotNull(process.env.FROM_BLOCK, 'FROM_BLOCK is not set')),
        to: Number(assertNotNull(process.env.TO_BLOCK, 'TO_BLOCK is not set')),
    })
    .setFields({
        log: {
            transactionHash: true,
        },
    })
    .addLog({
        address: [TOKEN_ADDRESS],
        topic0: [token.events.Transfer.topic],
    })

export type Fields = EvmBatchProcessorFields<typeof processor>
export type Block = BlockHeader<Fields>
export type Log = _Log<Fields>
export type Transaction = _Transaction<Fields>
export type ProcessorContext<Store> = DataHandlerContext<Store, Fields>
