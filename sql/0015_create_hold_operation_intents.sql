-- 0015: hold operations sent to the acquirer and not yet recorded (`ledger.hold_operation_intents`).
--
-- A capture, increment, void or refund is noted here before the ledger calls the acquirer, and the
-- note is deleted once the acquirer's answer is recorded (or the acquirer refused it). A note that
-- outlives its process — the ledger died, or the call's outcome stayed unknown, after the acquirer may
-- have applied it — is what recovery (`HoldService.recoverUnrecorded`) works from: it asks the
-- acquirer about the payment by our reference and records the modification under its reference with
-- the original request's idempotency key, or drops the note when the acquirer never applied it.
--
-- Not part of the event log (nothing here is a fact the ledger asserts; it is a to-do list), so rows
-- are deleted; the facts are the hold events recovery appends.

CREATE TABLE ledger.hold_operation_intents (
    modification_reference text        PRIMARY KEY,
    order_id               text        NOT NULL,
    kind                   text        NOT NULL CHECK (kind IN ('capture', 'increment', 'void', 'refund')),
    -- The ledger's idempotency key and request hash of the operation (hold:<order>:<kind>:<key>), so
    -- a client's retry with its key after recovery is answered as a replay. NULL for a shipment's
    -- capture: recovery records the capture only, and the client's retry then records the shipment.
    ledger_key             text,
    request_hash           bytea,
    -- The client's Idempotency-Key, if it sent one, and the actor: the recorded events' metadata.
    idempotency_key        text,
    actor                  text        NOT NULL,
    noted_at               timestamptz NOT NULL
);

CREATE INDEX hold_operation_intents_noted_at ON ledger.hold_operation_intents (noted_at);

GRANT SELECT, INSERT, DELETE ON ledger.hold_operation_intents TO ledger_app;
GRANT SELECT ON ledger.hold_operation_intents TO ledger_auditor;
