import { TypeormDatabase } from '@subsquid/typeorm-store'
import * as token from './abi/token'
import { Transfer } from './model'
import { processor, TOKEN_ADDRESS } from './processor'

processor.run(new TypeormDatabase({ supportHotBlocks: true }), async (ctx) => {
    const transfers: Transfer[] = []
    for (const block of ctx.blocks) {
        for (const log of block.logs) {
            if (log.address !== TOKEN_ADDRESS || log.topics[0] !== token.events.Transfer.topic) continue
            const { from, to, value } = token.events.Transfer.decode(log)
            transfers.push(new Transfer({
                id: log.id,
                blockNumber: block.header.height,
                txHash: log.transactionHash,
                logIndex: log.logIndex,
                from,
                to,
                amount: value,
            }))
        }
    }
    await ctx.store.insert(transfers)
})
