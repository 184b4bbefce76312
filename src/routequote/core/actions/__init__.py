"""Pure builders of unsigned actions (EVM transactions, Solana instructions), the bundle that carries
them with its safety receipt, and the approval_v3 / verification-context rules.

Nothing here signs, submits, reads a clock or the environment: times, wallets, recipients and contract
addresses are handed in. `routequote.verify` re-derives everything from the same definitions.
"""
