-- 0009: settlement reports stored in parts, with an index of their lines.
--
-- The acquirer's report is read in pages and stored as it arrives, so that neither the job nor the
-- database statement needs a whole report at once: `settlement_report_parts` holds the CSV in
-- order (part 0 starts with the header; the concatenation of the parts is the report, byte for
-- byte), `settlement_reports` the digest of the whole, its line count and number of parts, and
-- `settlement_report_lines` one row per line with our reference and the acquirer's, which
-- reconciliation joins to the settlement items. All three are written in one transaction, before
-- the SettlementBatchSubmitted event that carries the digest.
CREATE TABLE ledger.settlement_report_parts (
    batch_id text    NOT NULL,
    part     integer NOT NULL CHECK (part >= 0),
    csv      text    NOT NULL,
    PRIMARY KEY (batch_id, part)
);
-- Parts are written once and read rarely; storing them uncompressed spares the CPU the nightly run needs.
ALTER TABLE ledger.settlement_report_parts ALTER COLUMN csv SET STORAGE EXTERNAL;

CREATE TABLE ledger.settlement_report_lines (
    batch_id           text    NOT NULL,
    line_no            integer NOT NULL CHECK (line_no >= 1),
    type               text    NOT NULL,
    our_reference      text    NOT NULL,
    acquirer_reference text    NOT NULL,
    PRIMARY KEY (batch_id, line_no)
);
CREATE INDEX settlement_report_lines_by_ours ON ledger.settlement_report_lines (batch_id, our_reference);
CREATE INDEX settlement_report_lines_by_acquirers ON ledger.settlement_report_lines (batch_id, acquirer_reference);

-- Reports stored whole before this migration become one part each (their line index is built
-- from the CSV the first time reconciliation needs it).
INSERT INTO ledger.settlement_report_parts (batch_id, part, csv) SELECT batch_id, 0, csv FROM ledger.settlement_reports;
ALTER TABLE ledger.settlement_reports ADD COLUMN line_count integer, ADD COLUMN parts integer;
UPDATE ledger.settlement_reports
SET line_count = (length(csv) - length(replace(csv, E'\n', ''))) - 1, parts = 1;
ALTER TABLE ledger.settlement_reports DROP COLUMN csv;
ALTER TABLE ledger.settlement_reports ALTER COLUMN line_count SET NOT NULL, ALTER COLUMN parts SET NOT NULL;

GRANT SELECT, INSERT ON ledger.settlement_report_parts, ledger.settlement_report_lines TO ledger_app;
GRANT SELECT ON ledger.settlement_report_parts, ledger.settlement_report_lines TO ledger_auditor;
