-- acquirer 0004: finished payments out of the model's memory.
--
-- A payment is finished when its hold is no longer open and every approved capture and refund of it is
-- settled (LedgerAcquirer.FinishedPayment). Each settlement takes the finished payments out of the model
-- and inserts them here, in the transaction that journals it, with the settlement's journal `seq`: so
-- the model holds the open day, not every day since the journal began. Before a command that names a
-- payment or a modification the model does not hold, the service reads the newest row before that
-- command's `seq` and puts it back (replay reads the same rows at the same positions, so it is exact).
-- A payment put back and finished again is inserted again under the later settlement: rows are
-- versions, never changed.
--
-- `body`: the payment (hold and modifications) as canonical JSON. `finished_modifications` finds the
-- payment of a modification reference.

CREATE TABLE acquirer.finished_payments (
    reference text   NOT NULL,
    seq       bigint NOT NULL CHECK (seq > 0),
    body      text   NOT NULL,
    PRIMARY KEY (reference, seq)
);

CREATE TABLE acquirer.finished_modifications (
    modification_reference text   NOT NULL,
    seq                    bigint NOT NULL CHECK (seq > 0),
    reference              text   NOT NULL,
    PRIMARY KEY (modification_reference, seq)
);

CREATE INDEX finished_payments_seq ON acquirer.finished_payments (seq);

CREATE TRIGGER finished_payments_append_only BEFORE UPDATE OR DELETE ON acquirer.finished_payments
    FOR EACH ROW EXECUTE FUNCTION acquirer.reject_mutation();
CREATE TRIGGER finished_payments_no_truncate BEFORE TRUNCATE ON acquirer.finished_payments
    FOR EACH STATEMENT EXECUTE FUNCTION acquirer.reject_mutation();
CREATE TRIGGER finished_modifications_append_only BEFORE UPDATE OR DELETE ON acquirer.finished_modifications
    FOR EACH ROW EXECUTE FUNCTION acquirer.reject_mutation();
CREATE TRIGGER finished_modifications_no_truncate BEFORE TRUNCATE ON acquirer.finished_modifications
    FOR EACH STATEMENT EXECUTE FUNCTION acquirer.reject_mutation();

GRANT SELECT, INSERT ON acquirer.finished_payments, acquirer.finished_modifications TO acquirer_app;
