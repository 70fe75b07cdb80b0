-- 0003: shipping contacts — personal data, kept out of the hash-chained log.
--
-- An order's events carry only a contact reference (contact_ref); the name, e-mail and address
-- live here, so that they can be erased on request without touching (or breaking) the chain.
-- Written just before the order is opened; an erasure deletes the row and leaves the reference.
CREATE TABLE ledger.shipping_contacts (
    contact_ref text        PRIMARY KEY CHECK (contact_ref <> '' AND octet_length(contact_ref) <= 120),
    data        jsonb       NOT NULL,
    created_at  timestamptz NOT NULL
);

GRANT SELECT, INSERT, DELETE ON ledger.shipping_contacts TO ledger_app;
-- Auditors see the money history, not the shoppers' personal data.
