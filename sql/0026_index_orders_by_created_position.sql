-- 0026: the order list reads a page, not every order.
--
-- GET /orders (the console's list, the back office's paging) reads `ledger.order_rows_at` (0010) in
-- created_position order from a cursor, LIMIT n. With only the primary key (projection, key), whose keys are
-- order ids in no time order, PostgreSQL read every `orders` row, applied the lapse to each and sorted them all
-- for the first page: 0.45-0.54 s a page at 200,000 orders, and 5.2 s at 88,000 orders in a day run at the
-- machine's maximum (bench/day.sh, docs/performance.md), growing with every order the day opened. With this
-- index the page is one ordered range from the cursor, stopped after n rows: 4 ms at 200,000 orders.
--
-- Partial (`orders` rows only): the other read models' rows (holds, inventory, …) do not pay for it. An `orders`
-- row is never updated in place (HOT) anyway, because `row` is in the open-holds expression index (0004), so the
-- cost at append time is one entry per written version of an order's row; docs/performance.md measures it.
--
-- A filter on status, or on opened_at, still reads from the cursor until it has n matching rows (status is the
-- lapse's, computed at the read's instant, so no index on the stored status could answer it alone).
CREATE INDEX projection_rows_orders_by_created_position ON ledger.projection_rows (created_position)
    WHERE projection = 'orders';
