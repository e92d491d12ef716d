import { createConfig } from "ponder";
import { getAddress } from "viem";
import { TokenAbi } from "./abis/TokenAbi";

// The runner (bench/e2e.ts) passes the anvil node, the token and the block range it measures.
const required = (name: string) => {
  const value = process.env[name];
  if (value === undefined || value === "") throw new Error(`${name} is not set`);
  return value;
};

export default createConfig({
  database: {
    kind: "postgres",
    connectionString: required("DATABASE_URL"),
  },
  chains: {
    anvil: {
      id: 31337,
      rpc: required("PONDER_RPC_URL_31337"),
      // Ponder's guide for anvil: its RPC cache is for chains that never reset
      disableCache: true,
    },
  },
  contracts: {
    Token: {
      abi: TokenAbi,
      chain: "anvil",
      address: getAddress(required("TOKEN_ADDRESS")),
      startBlock: Number(required("FROM_BLOCK")),
      endBlock: Number(required("TO_BLOCK")),
    },
  },
});
