-- acquirer 0003: settlement report lines in a table instead of the model's memory, and snapshots
-- written as they are encoded.
--
-- A settlement of a day's million captures produced a report of a million lines that the model held
-- in memory (and copied into every snapshot). The service now settles a batch page by page and inserts
-- each page's lines here in the transaction that journals the settlement, so they are committed with
-- it; the model keeps only the batch's line count. `GET /settlement/reports/{n}` reads them in pages
-- (keyset on `line`). `line`: 0-based position in the report (the MerchantPayout line is the last);
-- `body`: the line's canonical JSON. Replaying a settlement inserts nothing when its lines are here
-- (a journal written before this migration gets them on its first replay).

CREATE TABLE acquirer.report_lines (
    batch_number bigint  NOT NULL,
    line         integer NOT NULL CHECK (line >= 0),
    body         text    NOT NULL,
    PRIMARY KEY (batch_number, line)
);

CREATE TRIGGER report_lines_append_only BEFORE UPDATE OR DELETE ON acquirer.report_lines
    FOR EACH ROW EXECUTE FUNCTION acquirer.reject_mutation();
CREATE TRIGGER report_lines_no_truncate BEFORE TRUNCATE ON acquirer.report_lines
    FOR EACH STATEMENT EXECUTE FUNCTION acquirer.reject_mutation();

GRANT SELECT, INSERT ON acquirer.report_lines TO acquirer_app;

-- A snapshot is encoded and stored part by part, its header (with the part count and digest, known
-- only at the end) last, in the same transaction: the parts' reference to it is checked at COMMIT.
ALTER TABLE acquirer.snapshot_parts
    DROP CONSTRAINT snapshot_parts_seq_fkey,
    ADD CONSTRAINT snapshot_parts_seq_fkey FOREIGN KEY (seq) REFERENCES acquirer.snapshots (seq)
        ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED;
