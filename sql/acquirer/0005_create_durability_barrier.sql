-- acquirer 0005: the journal's durability barrier (the ledger's counterpart is sql/0024, ledger.durability_barrier).
--
-- With a synchronous standby, a journal INSERT whose wait for the standby is cut short (its backend terminated: a
-- demotion, a pool reset, an operator) stays committed on the primary and visible there, though no standby has it; a
-- failover then loses that row. The service never answers such a command (its INSERT failed), but it must not build on
-- the row either: a reload after the failure would replay it into the model, a retry under its idempotency key would
-- be answered from it, and after the failover the next row would take the following `seq`, leaving a gap in the journal
-- (the failover drill found this: the model then refused to reload, "acquirer.journal has a gap"). So before the service
-- reads the journal to rebuild its model, and before it answers a retry from a stored row, it updates this row in a
-- statement of its own: that commit waits for the standby, its commit record lies after every commit the service could
-- have read, and once the standby has it, it has them. A transaction that writes nothing would commit without waiting
-- (PostgreSQL waits only for a commit that wrote WAL), hence the write. The count means nothing else.
CREATE TABLE acquirer.durability_barrier (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    barriers  bigint  NOT NULL DEFAULT 0
);
INSERT INTO acquirer.durability_barrier DEFAULT VALUES;
GRANT SELECT, UPDATE ON acquirer.durability_barrier TO acquirer_app;
