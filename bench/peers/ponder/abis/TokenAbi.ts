// The Transfer event of the devnet token (src/devnet/evm/DevnetToken.sol), as a const ABI for Ponder's types.
export const TokenAbi = [
  {
    type: "event",
    name: "Transfer",
    anonymous: false,
    inputs: [
      { name: "from", type: "address", indexed: true },
      { name: "to", type: "address", indexed: true },
      { name: "value", type: "uint256", indexed: false },
    ],
  },
] as const;
