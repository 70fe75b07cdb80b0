import LedgerPostgres
import LedgerTestSupport
import Testing

@Suite(.machine(.shared)) struct SQLScriptTests {
    @Test func splitsAtTopLevelSemicolonsOnly() {
        let script = """
            -- a comment; with a semicolon
            CREATE TABLE a (x text DEFAULT 'semi;colon' , "we;ird" int);
            /* block; /* nested; */ still comment; */
            INSERT INTO a VALUES ('it''s; fine', 1);
            SELECT E'back\\'slash; quote';
            CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$;
            CREATE FUNCTION g() RETURNS int LANGUAGE plpgsql AS $body$ BEGIN RETURN $$x;$$::text::int; END $body$;
            SELECT $1, price$2 FROM t;
            ;;
            """
        let statements = SQLScript.statements(script)
        #expect(statements.count == 6)
        #expect(statements[0].hasSuffix(#""we;ird" int)"#))
        #expect(statements[1].hasPrefix("/* block; /* nested; */ still comment; */"))
        #expect(statements[2] == #"SELECT E'back\'slash; quote'"#)
        #expect(statements[3].hasSuffix("END $$"))
        #expect(statements[4].hasSuffix("END $body$"))
        #expect(statements[5] == "SELECT $1, price$2 FROM t")
    }

    @Test func theMigrationsSplitIntoWholeStatements() throws {
        let migrations = try Migrator.load(from: TestCluster.migrationsDirectory)
        for migration in migrations {
            let statements = SQLScript.statements(migration.sql)
            #expect(!statements.isEmpty)
            // Every function body stays in one piece.
            for statement in statements where statement.contains("$$") {
                #expect(statement.components(separatedBy: "$$").count % 2 == 1, "\(migration.name): \(statement.prefix(60))")
            }
        }
    }
}
