-- 0007: settlement lines in an order's history. A closed settlement batch lists its lines in
-- `items` (each with the order's id); this index finds the batches that name an order
-- (`data -> 'items' @> '[{"order_id": "…"}]'`), so GET /orders/{id}/history and the auditor's
-- psql query can show them without scanning every batch.
CREATE INDEX events_settlement_items ON ledger.events USING gin ((data -> 'items') jsonb_path_ops)
    WHERE type = 'SettlementBatchClosed';
