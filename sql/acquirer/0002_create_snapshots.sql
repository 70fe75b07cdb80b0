-- acquirer 0002: snapshots of the model state, so that a start replays only the journal's tail.
--
-- A snapshot is the model state (AcquirerModelState's canonical JSON) after journal row `seq`, stored
-- in parts (bytea, a few MiB each: a state of a million payments is larger than one value may be)
-- with its SHA-256. The header and its parts are inserted in one transaction, so a snapshot either
-- exists whole or not at all; the service then deletes older ones. On start the service loads the
-- newest snapshot whose parts hash to its digest and replays the journal rows after its `seq`; with
-- none (or a damaged one) it replays the whole journal. The journal stays the record: a snapshot is
-- a cache of replaying it, and a test checks that snapshot + tail equals a full replay byte for byte.

CREATE TABLE acquirer.snapshots (
    seq      bigint      PRIMARY KEY CHECK (seq > 0),
    parts    integer     NOT NULL CHECK (parts > 0),
    sha256   bytea       NOT NULL,
    taken_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE acquirer.snapshot_parts (
    seq  bigint  NOT NULL REFERENCES acquirer.snapshots (seq) ON DELETE CASCADE,
    part integer NOT NULL CHECK (part >= 0),
    data bytea   NOT NULL,
    PRIMARY KEY (seq, part)
);

-- Parts are large and already dense: keep them out of the TOAST compressor.
ALTER TABLE acquirer.snapshot_parts ALTER COLUMN data SET STORAGE EXTERNAL;

GRANT SELECT, INSERT, DELETE ON acquirer.snapshots, acquirer.snapshot_parts TO acquirer_app;
