-- The durable head (issue 30, item 4; Sources/LedgerPostgres/Feeds/HeadWatcher.swift).
--
-- With a synchronous standby, a commit whose wait for the standby is cancelled stays committed on the primary and
-- visible to every session there, though no standby has it: a failover then loses it, and another event takes its
-- position. So the daemon serves its consumers (the live feed, subscriptions, webhooks, checkpoints, the transparency
-- tree) only positions at or below its durable head: the last position that a COMMIT which waited for the standby and
-- returned came after. The writer's own commits move it for what they append. For positions it did not commit itself
-- (another daemon's, or one whose wait was cancelled) the daemon runs a barrier: in one transaction it reads the head,
-- writes this table's row and commits. A transaction that writes nothing commits without waiting for the standby
-- (PostgreSQL waits only for a commit that wrote WAL), hence the write; the commit record it waits for lies after every
-- commit the head read saw, so once the standby has it, it has them. The row's count says how many barriers ran and
-- means nothing else.
CREATE TABLE ledger.durability_barrier (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    barriers bigint NOT NULL DEFAULT 0
);
INSERT INTO ledger.durability_barrier DEFAULT VALUES;
GRANT SELECT, UPDATE ON ledger.durability_barrier TO ledger_app;
GRANT SELECT ON ledger.durability_barrier TO ledger_auditor;
