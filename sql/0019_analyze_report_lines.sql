-- 0019: fresh statistics for the report lines once a report is stored.
--
-- A report arrives a million lines at a time (sql/0009's line index), and reconciliation looks the batch's
-- items up in it with anti-joins (ReconciliationLookups.forEachAbsentItem). Planned on statistics taken
-- before those lines existed, the lookup believed the report's key had no lines and chose a nested loop
-- that scans the whole table for every item: `ledgerd bench sdr` (990,000 captures, an uploaded SDR)
-- spent more than ten minutes in it at full CPU before autovacuum's ANALYZE caught up. With the table
-- analysed after each stored report, the same lookup is a hash anti-join of a few seconds.
--
-- ANALYZE needs the table's owner; the daemon runs as an application role (a member of ledger_app), so
-- this function runs it as its owner. It takes no argument and analyses only this table, so a caller can
-- cost the database at most one sampled scan of it (300 × default_statistics_target rows).
CREATE FUNCTION ledger.analyze_settlement_report_lines() RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    ANALYZE ledger.settlement_report_lines;
END;
$$;

REVOKE ALL ON FUNCTION ledger.analyze_settlement_report_lines() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger.analyze_settlement_report_lines() TO ledger_app;
