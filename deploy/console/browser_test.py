#!/usr/bin/python3
"""The back-office console in a real browser (issue 32): headless Chromium driven over WebDriver against a real
`ledgerd serve` on a temporary data directory and a free port.

Why Python and Debian's python3-selenium rather than a Swift WebDriver client on AsyncHTTPClient: Selenium is the
maintained reference client of the W3C WebDriver protocol (sessions, capabilities, waits, the browser's console log,
cookies, screenshots), packaged by Debian beside chromium and chromium-driver, so the three come from one place at
matching versions; a hand-written Swift client would be protocol code that itself needs testing, and the test would
then check our client as much as the console. The journey below drives the daemon only through HTTP — the browser
for the console, plain HTTP for the API — exactly as people and the storefront do.

The journeys (on the wall clock; the last on a rehearsal clock, LEDGERD_CLOCK_START four days on, so that the acquirer
raises the chargeback of the settled day within the run):
- the operator signs in with the keyboard alone (Tab, typing, Enter) and reaches Today and Orders;
- two payments through the API as the README's quick start makes them (one on tok_visa_chargeback_fraud, whose
  cardholder disputes it); the quick start order found by its PSP reference, offered only the actions its state
  allows, captured, shipped and refunded (a bad amount first: the API's error beside the field, nothing appended);
- the operator closes the day from the console, the run's steps streamed to the page, and opens the batch;
- the acquirer's report of the batch, one line's amount changed, uploaded through the form: the batch's page shows the
  amount_mismatch break, which the operator resolves with a note (an event);
- the auditor signs in, verifies the chain, reads the quick start order as of a past moment through the time
  picker (authorized then, before its capture), reads the day's journal (balanced), finds no write action on any
  page, and every forged POST (hold operations, a settlement run, a report upload, a checkpoint) is refused (403)
  with nothing appended;
- the daemon is restarted four days on: the acquirer's chargeback arrives through its dispute feed, the operator
  defends it before its deadline with evidence text, and the auditor's forged answers are refused;
- every visible field of every page visited has a label; Today and an order page fit a narrow (390 px) screen.
Each step checks what the page shows and what the ledger recorded (its head, `GET /orders/{id}`, reconciliations,
disputes). Each page's screenshot goes to .build/console-screenshots/; the browser's console log must hold no error (a
Content-Security-Policy violation is logged there as one).

Bounded: the whole run stops after --timeout seconds (default 300); the daemon and the driver are stopped in every case.
Run from the repository: /usr/bin/python3 deploy/console/browser_test.py [--ledgerd .build/debug/ledgerd]
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from free_port import free_port  # noqa: E402 (deploy/free_port.py: below the ephemeral range, checked free)
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
import csv
import datetime
import io
from selenium.webdriver.support.ui import WebDriverWait


class Timeout(Exception):
    pass


def http(method, url, body=None, headers=None):
    """(status, headers, text) of one HTTP request, without following redirects."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ledgerd", default=".build/debug/ledgerd")
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("--screenshots", default=".build/console-screenshots")
    # The README's picture of the console (deploy/console/refresh-screenshot.sh): Today after the day was settled.
    parser.add_argument("--docs-screenshot", default=None)
    args = parser.parse_args()

    def expired(signum, frame):
        raise Timeout(f"the browser test did not finish within {args.timeout} s")

    signal.signal(signal.SIGALRM, expired)
    signal.alarm(args.timeout)
    started = time.monotonic()
    # This run's screenshots only: the last run's go first.
    shutil.rmtree(args.screenshots, ignore_errors=True)
    os.makedirs(args.screenshots, exist_ok=True)
    work = tempfile.mkdtemp(prefix="ledgerd-console-")
    # The embedded PostgreSQL runs as an unprivileged user when this runs as root: it must reach its data directory.
    os.chmod(work, 0o755)
    data = os.path.join(work, "data")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(os.path.join(work, "ledgerd.log"), "w")
    daemon = None

    def start_daemon(clock):
        """`ledgerd serve` on the run's data directory with its clock starting at `clock` (the dispute feed polled each
        second), once /health answers."""
        nonlocal daemon
        environment = dict(os.environ, LEDGERD_DISPUTE_POLL_INTERVAL_SECONDS="1", LEDGERD_LOG_LEVEL="warning")
        environment.pop("LEDGERD_CLOCK_START", None)
        if clock:
            environment["LEDGERD_CLOCK_START"] = clock
        daemon = subprocess.Popen(
            [args.ledgerd, "serve", "--data-dir", data, "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, env=environment
        )
        for _ in range(180):
            if daemon.poll() is not None:
                raise RuntimeError(f"ledgerd serve exited ({daemon.returncode}); log: {log.name}")
            try:
                if http("GET", f"{base}/health")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(1)
        raise RuntimeError("ledgerd did not answer /health")

    def stop_daemon():
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()

    driver = None
    failures = []
    # Errors the browser's console logged, other than the one refusal the journey provokes on purpose.
    unexpected = []
    shots = 0

    def check(condition, what):
        if not condition:
            failures.append(what)
            print(f"FAIL: {what}", file=sys.stderr)

    def shot(name):
        nonlocal shots
        shots += 1
        driver.save_screenshot(os.path.join(args.screenshots, f"{shots:02d}-{name}.png"))

    def submit(element):
        """Clicks a link or a form's button and waits (15 s at most) until the page it leads to has replaced this one:
        the click returns before a form's POST and its 303 are done, so a look-up right after it could search the old
        page (CI once clicked the refund's confirm button on the order page it had just left), and `arrived` alone
        cannot tell when the old URL already contains the fragment (the refund's 422 page, a confirmation's Cancel)."""
        old = driver.find_element(By.TAG_NAME, "html")
        element.click()

        def replaced(d):
            # Stale, or (CI once saw it mid-navigation) chromedriver's "Node with given id does not belong to the
            # document": either way the old page is gone. Then the new one must have finished loading.
            try:
                old.is_enabled()
                return False
            except WebDriverException:
                pass
            try:
                return d.execute_script("return document.readyState") == "complete"
            except WebDriverException:
                return False

        try:
            WebDriverWait(driver, 15).until(replaced)
        except TimeoutException:
            check(False, f"the click on {element} led to no new page: {driver.current_url}")

    def arrived(fragment):
        """Whether the browser reaches a URL containing `fragment` within 15 s (a form's POST and its 303 take a moment
        after the click returns)."""
        try:
            WebDriverWait(driver, 15).until(lambda d: fragment in d.current_url)
            return True
        except TimeoutException:
            return False

    def browser_errors():
        """The browser console's errors since the last call (CSP violations are logged as errors)."""
        return [entry for entry in driver.get_log("browser") if entry.get("level") in ("SEVERE", "ERROR")]

    def head_position():
        status, _, text = http("GET", f"{base}/health")
        return json.loads(text)["database"]["last_position"]

    def api(method, path, body=None, key=None, content_type="application/json", idempotency=None):
        headers = {"Authorization": f"Bearer {key or operator}"}
        if body is not None:
            headers["Content-Type"] = content_type
        if idempotency:
            headers["Idempotency-Key"] = idempotency
        status, _, text = http(method, f"{base}{path}", body, headers)
        return status, text

    def console_csv(path):
        """A console export fetched as the browser downloads it, with its session's cookies: (status, content type,
        rows as a spreadsheet reads them)."""
        cookie = "; ".join(f"{c['name']}={c['value']}" for c in driver.get_cookies())
        status, headers, text = http("GET", f"{base}{path}", headers={"Cookie": cookie})
        return status, headers.get("Content-Type", ""), list(csv.reader(io.StringIO(text)))

    def unlabelled():
        """The visible fields of the page without a label (by `for`, or wrapping them)."""
        missing = []
        for field in driver.find_elements(By.CSS_SELECTOR, "input, select, textarea"):
            if field.get_attribute("type") == "hidden":
                continue
            ident = field.get_attribute("id")
            labelled = bool(ident) and bool(driver.find_elements(By.CSS_SELECTOR, f"label[for='{ident}']"))
            wrapped = bool(field.find_elements(By.XPATH, "ancestor::label"))
            if not (labelled or wrapped):
                missing.append(field.get_attribute("outerHTML"))
        return missing

    def labelled(what):
        check(not unlabelled(), f"{what}: fields without a label: {unlabelled()}")

    try:
        # The wall clock: an as-of moment is the ledger's time of recording (the database's, which a rehearsal clock
        # does not move). The chargeback's journey comes last, after a restart on a clock four days on.
        start_daemon(None)
        keys = json.load(open(os.path.join(data, "api-keys.json")))
        operator, auditor = keys["operator_keys"][0], keys["auditor_keys"][0]

        options = webdriver.ChromeOptions()
        for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,2400"]:
            options.add_argument(flag)
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
        driver.set_page_load_timeout(30)

        # Sign in as operator with the keyboard alone: Tab to the key field, type, Enter; then Tab to the Orders link.
        driver.get(f"{base}/console/")
        check(driver.current_url.endswith("/console/sign-in"), "the console starts at sign-in")
        labelled("sign-in")
        shot("sign-in")
        body = driver.find_element(By.TAG_NAME, "body")
        for _ in range(10):
            body = driver.switch_to.active_element
            if body.get_attribute("id") == "key":
                break
            body.send_keys(Keys.TAB)
        check(driver.switch_to.active_element.get_attribute("id") == "key", "Tab reaches the key field")
        driver.switch_to.active_element.send_keys(operator + Keys.ENTER)
        check(arrived("/console/today"), f"signed in, Today: {driver.current_url}")
        for _ in range(20):
            focused = driver.switch_to.active_element
            if focused.get_attribute("href") and focused.get_attribute("href").endswith("/console/orders"):
                break
            focused.send_keys(Keys.TAB)
        driver.switch_to.active_element.send_keys(Keys.ENTER)
        check(arrived("/console/orders"), f"Tab and Enter reach Orders: {driver.current_url}")
        driver.get(f"{base}/console/today")
        check("operator:" in driver.find_element(By.CLASS_NAME, "who").text, "the header names the operator")
        cookie = driver.get_cookie("ledgerd_console")
        check(cookie is not None and cookie.get("httpOnly") and cookie.get("sameSite") == "Strict", f"session cookie flags: {cookie}")
        labelled("today")
        shot("today")

        # A payment through the API, as the quick start makes it.
        payment = {
            "gateway": "stripe", "source": "tok_visa", "amount": 5900, "currency": "USD", "description": "Clock",
            "shipping_contact": "Jane Appleseed", "shipping_email": "jane@example.com", "shipping_street": "1 Infinite Loop",
            "shipping_city": "Cupertino", "shipping_state": "CA", "shipping_zip": "95014", "shipping_method_name": "Standard",
        }
        status, _, text = http(
            "POST", f"{base}/payment", json.dumps(payment).encode(),
            {"Content-Type": "application/json", "Idempotency-Key": "browser-cart-1"},
        )
        check(status == 200, f"POST /payment: {status} {text}")
        order = json.loads(text)["order_id"]
        # A second payment, on the card whose cardholder will dispute it, captured through the API.
        status, _, text = http(
            "POST", f"{base}/payment", json.dumps(dict(payment, source="tok_visa_chargeback_fraud")).encode(),
            {"Content-Type": "application/json", "Idempotency-Key": "browser-cart-2"},
        )
        check(status == 200, f"POST /payment (disputed card): {status} {text}")
        disputed = json.loads(text)["order_id"]
        status, text = api("POST", f"/orders/{disputed}/capture", b"{}", idempotency="browser-cap-2")
        check(status == 200, f"capture of the disputed card's order: {status} {text}")
        status, text = api("GET", f"/orders/{order}")
        psp = json.loads(text)["order"]["psp_reference"]
        # A second at least between the authorization and the capture, so that a moment in between has a whole second.
        time.sleep(1.2)

        # Find it in the console by the acquirer's PSP reference: the forms are those an authorized order allows.
        driver.get(f"{base}/console/orders")
        labelled("orders")
        shot("orders")
        driver.find_element(By.ID, "order-id").send_keys(psp)
        submit(driver.find_element(By.CSS_SELECTOR, "form[role='search'] button"))
        check(arrived(f"/console/orders/{order}"), f"found the order by its PSP reference: {driver.current_url}")
        check(driver.find_element(By.ID, "order-status").text == "authorized", "the order is authorized")
        offered = [form.get_attribute("id") for form in driver.find_elements(By.CSS_SELECTOR, ".actions form")]
        check(offered == ["capture-form", "void-form", "ship-form"], f"an authorized order's actions: {offered}")
        labelled("order")
        shot("order-authorized")
        before = head_position()
        submit(driver.find_element(By.CSS_SELECTOR, "#capture-form button"))
        check(arrived("?done=capture"), f"the capture was recorded: {driver.current_url}")
        check(driver.find_element(By.ID, "order-status").text == "captured", "the page says captured")
        check(driver.find_element(By.ID, "figure-captured").text == "59.00", "the hold's captured figure")
        timeline = driver.find_element(By.CLASS_NAME, "timeline").text
        check("HoldCaptured" in timeline, "the timeline shows the capture")
        shot("order-captured")
        status, _, text = http("GET", f"{base}/orders/{order}", headers={"Authorization": f"Bearer {operator}"})
        check(status == 200 and json.loads(text)["order"]["status"] == "captured", f"GET /orders/{{id}} says captured: {text}")
        check(head_position() > before, "the capture appended events")
        # Ship it, then refund part of it; a bad amount first: the API's error beside the field, nothing appended.
        driver.find_element(By.ID, "ship-carrier").send_keys("UPS")
        driver.find_element(By.ID, "ship-tracking").send_keys("1Z999AA10123456784")
        submit(driver.find_element(By.CSS_SELECTOR, "#ship-form button"))
        check(arrived("?done=ship"), f"the shipment was recorded: {driver.current_url}")
        check(driver.find_element(By.ID, "order-status").text == "shipped", "the page says shipped")
        # The order's references (issue 55): the acquirer's PSP reference, the authorization code, the tracking number.
        check(driver.find_element(By.ID, "ref-psp").text == psp, f"the PSP reference: {driver.find_element(By.ID, 'ref-psp').text}")
        check(driver.find_element(By.ID, "ref-auth-code").text.strip() != "", "the authorization code is shown")
        tracking = driver.find_element(By.ID, "ref-tracking").text
        check(tracking == "UPS 1Z999AA10123456784", f"the carrier and tracking number: {tracking}")
        before = head_position()
        driver.find_element(By.ID, "refund-amount").send_keys("abc")
        driver.find_element(By.ID, "refund-reason").send_keys("scratched")
        submit(driver.find_element(By.CSS_SELECTOR, "#refund-form button"))
        check(arrived("/refund"), f"the refund form answered: {driver.current_url}")
        error = driver.find_element(By.ID, "refund-amount-error").text
        check(error.startswith("invalid_amount amount must be a decimal string"), f"the API's error beside the amount: {error}")
        # The refusal's page comes with the API's status (422), which Chromium logs as a failed load: that one entry is
        # expected and allowed, by its URL and status; any other error (a CSP violation above all) still fails.
        refusal = f"/console/orders/{order}/refund - Failed to load resource: the server responded with a status of 422"
        logged = browser_errors()
        check(any(refusal in entry.get("message", "") for entry in logged), f"the refusal's 422 is what the browser saw: {logged}")
        unexpected.extend(entry for entry in logged if refusal not in entry.get("message", ""))
        check(head_position() == before, "the bad amount appended nothing")
        shot("order-bad-amount")
        amount = driver.find_element(By.ID, "refund-amount")
        amount.clear()
        amount.send_keys("10.00")
        submit(driver.find_element(By.CSS_SELECTOR, "#refund-form button"))
        # A refund cannot be taken back: a page says what will happen first; Cancel appends nothing (issue 55).
        check(arrived("/refund"), f"the refund's confirmation: {driver.current_url}")
        what = driver.find_element(By.ID, "confirm-what").text
        check(what.startswith(f"Refund 10.00 USD of order {order}"), f"the confirmation says what will happen: {what}")
        labelled("refund-confirmation")
        shot("refund-confirm")
        submit(driver.find_element(By.ID, "confirm-cancel"))
        check(arrived(f"/console/orders/{order}"), f"cancelled, back to the order: {driver.current_url}")
        check(head_position() == before, "a cancelled confirmation appended nothing")
        amount = driver.find_element(By.ID, "refund-amount")
        amount.clear()
        amount.send_keys("10.00")
        driver.find_element(By.ID, "refund-reason").send_keys("scratched")
        submit(driver.find_element(By.CSS_SELECTOR, "#refund-form button"))
        submit(driver.find_element(By.ID, "confirm-button"))
        check(arrived("?done=refund"), f"the refund was recorded: {driver.current_url}")
        status, text = api("GET", f"/events?after={before}&limit=100")
        refunds = [e for e in json.loads(text).get("events", []) if e.get("type") == "HoldRefunded"]
        check(len(refunds) == 1, f"the confirmed refund appended exactly one refund: {refunds}")
        timeline = driver.find_element(By.CLASS_NAME, "timeline").text
        check("refunded 10.00 USD (reason scratched) by operator:" in timeline, f"the timeline in sentences: {timeline}")
        check(driver.find_element(By.ID, "order-status").text == "partially_refunded", "the page says partially refunded")
        check(driver.find_element(By.ID, "figure-refunded").text == "10.00", "the hold's refunded figure")
        # Each sentence keeps its event's raw data one click away (for the auditor), hidden until asked for.
        raw = driver.find_elements(By.CSS_SELECTOR, ".timeline details.raw")
        raw_data = raw[-1].find_element(By.CSS_SELECTOR, "code.data") if raw else None
        check(raw_data is not None and not raw_data.is_displayed(), "the raw event data is folded away")
        if raw_data is not None:
            raw[-1].find_element(By.TAG_NAME, "summary").click()
            check(raw_data.is_displayed() and raw_data.text.startswith("{"), f"the raw toggle shows the event's JSON: {raw_data.text[:200]}")
        shot("order-refunded")
        status, _, text = http("GET", f"{base}/orders/{order}", headers={"Authorization": f"Bearer {operator}"})
        check(status == 200 and json.loads(text)["order"]["status"] == "partially_refunded", f"GET /orders/{{id}}: {text}")
        offered = [form.get_attribute("id") for form in driver.find_elements(By.CSS_SELECTOR, ".actions form")]
        check(offered == ["refund-form"], f"a shipped, partly refunded order offers a refund only: {offered}")
        # The order page on a narrow screen: nothing wider than the window.
        driver.set_window_size(390, 1600)
        wide = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        check(wide <= 0, f"the order page is {wide} px wider than a 390 px screen")
        shot("order-narrow")
        driver.get(f"{base}/console/today")
        wide = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        check(wide <= 0, f"Today is {wide} px wider than a 390 px screen")
        shot("today-narrow")
        driver.set_window_size(1280, 2400)

        # The day's settlement, run from the console (the open day closed now), its steps streamed to the page.
        driver.get(f"{base}/console/settlements")
        labelled("settlements")
        before = head_position()
        driver.find_element(By.ID, "run-close-now").click()
        submit(driver.find_element(By.CSS_SELECTOR, "#run-form button"))
        check(arrived("/console/settlements/run"), f"the close's confirmation: {driver.current_url}")
        check(driver.find_element(By.ID, "confirm-what").text.startswith("Close the open business day"), "it says which day closes")
        check(head_position() == before, "nothing is appended before the confirmation")
        shot("close-now-confirm")
        submit(driver.find_element(By.ID, "confirm-button"))
        check(arrived("/console/settlements/run"), f"the run's page: {driver.current_url}")
        WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.ID, "run-done") or d.find_elements(By.ID, "run-error"))
        steps = driver.find_elements(By.CSS_SELECTOR, "#run-progress li")
        check(len(steps) >= 3, f"the run's steps are listed: {[step.text for step in steps]}")
        check(driver.find_elements(By.ID, "run-done"), f"the run settled the day: {driver.find_element(By.TAG_NAME, 'main').text}")
        shot("settlement-run")
        status, text = api("GET", "/settlements")
        batches = json.loads(text)["settlements"]
        check(len(batches) == 1 and head_position() > before, f"the ledger has the day's batch: {text}")
        # The batch's page (issue 55), from the run's link: its items, its downloads, who closed the day early.
        batch_id = batches[0]["batch_id"]
        submit(driver.find_element(By.CSS_SELECTOR, f"#run-batches a[href='/console/settlements/{batch_id}']"))
        check(arrived(f"/console/settlements/{batch_id}"), f"the batch's page: {driver.current_url}")
        items = driver.find_elements(By.CSS_SELECTOR, "#batch-items tbody tr")
        check(len(items) >= 1 and "capture" in items[0].text, f"the batch lists its items: {[i.text for i in items]}")
        check("closed early by operator:" in driver.find_element(By.ID, "closed-early").text, "the batch says who closed it early")
        links = [a.get_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR, "#downloads a")]
        check(any(l.endswith("/items.csv") for l in links) and any(l.endswith("/report.csv") for l in links), f"downloads: {links}")
        # The downloads and the order list's export open as CSV with the rows the pages show (issue 55).
        status, kind, rows = console_csv(f"/console/settlements/{batch_id}/items.csv")
        check(status == 200 and kind.startswith("text/csv"), f"items.csv: {status} {kind}")
        check(rows and rows[0][:3] == ["position", "kind", "order_id"], f"items.csv's header: {rows[:1]}")
        check(len(rows) - 1 == len(items) and any(r[1] == "capture" and r[2] == order for r in rows[1:]),
              f"items.csv holds the batch's {len(items)} items, the quick start order's capture among them: {rows}")
        status, kind, rows = console_csv(f"/console/settlements/{batch_id}/report.csv")
        check(status == 200 and kind.startswith("text/csv") and any(order in row for row in rows[1:]),
              f"report.csv, the acquirer's report, names the order: {status} {kind} {rows[:3]}")
        status, kind, rows = console_csv("/console/orders.csv")
        check(status == 200 and kind.startswith("text/csv") and rows[0] == ["order_id", "opened_at", "status", "total", "currency"],
              f"orders.csv: {status} {kind} {rows[:1]}")
        check(any(r[0] == order and r[2] == "partially_refunded" for r in rows[1:]), f"orders.csv lists the order as refunded in part: {rows}")
        shot("batch")
        if args.docs_screenshot:
            driver.set_window_size(1280, 1100)
            driver.get(f"{base}/console/today")
            driver.save_screenshot(args.docs_screenshot)
            driver.set_window_size(1280, 2400)
        batch = batches[0]["batch_id"]
        driver.get(f"{base}/console/settlements/{batch}")
        check(arrived(f"/console/settlements/{batch}"), f"the batch's page: {driver.current_url}")

        # The acquirer's report of the batch with the quick start order's line changed by a cent, uploaded.
        status, report = api("GET", f"/settlements/{batch}/report.csv")
        check(status == 200, f"the batch's report: {status}")
        rows = list(csv.reader(io.StringIO(report)))
        header, lines = rows[0], rows[1:]
        gross = header.index("Gross Credit (GC)")
        changed = None
        for line in lines:
            if line[header.index("Type")] == "Settled" and line[header.index("Merchant Reference")] == order:
                # Integer cents, never floating point: "59.00" -> 5900 -> 5899 -> "58.99".
                units, fraction = line[gross].split(".")
                cents = int(units) * 100 + int(fraction) - 1
                line[gross] = f"{cents // 100}.{cents % 100:02d}"
                changed = line[gross]
        check(changed is not None, f"the report holds the quick start order's settled line: {report}")
        out = io.StringIO()
        writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
        writer.writerow(header)
        writer.writerows(lines)
        altered = os.path.join(work, "report-altered.csv")
        with open(altered, "w", newline="") as handle:
            handle.write(out.getvalue())
        driver.get(f"{base}/console/settlements")
        before = head_position()
        driver.find_element(By.ID, "report-file").send_keys(altered)
        submit(driver.find_element(By.CSS_SELECTOR, "#upload-form button"))
        check(arrived("done=reconcile"), f"the report was reconciled: {driver.current_url}")
        classes = [cell.text for cell in driver.find_elements(By.CLASS_NAME, "break-class")]
        check("amount_mismatch" in classes, f"the batch's page shows the mismatch: {classes}")
        check(head_position() > before, "the upload's reconciliation was recorded")
        shot("batch-break")
        reason = driver.find_element(By.CSS_SELECTOR, "form.resolve input[name='reason']")
        reason.send_keys("acquirer confirmed the line; ticket 7")
        before = head_position()
        submit(driver.find_element(By.CSS_SELECTOR, "form.resolve button"))
        check(arrived("done=resolve"), f"the break was resolved: {driver.current_url}")
        check("acquirer confirmed the line; ticket 7" in driver.find_element(By.TAG_NAME, "main").text, "the page shows the resolution")
        check(head_position() == before + 1, "the resolution is one event")
        shot("batch-resolved")
        status, text = api("GET", f"/settlements/{batch}/reconciliation")
        check(status == 200 and "ticket 7" in text, f"the API's reconciliation has the resolution: {text[:400]}")
        status, kind, rows = console_csv(f"/console/settlements/{batch}/breaks.csv")
        check(status == 200 and kind.startswith("text/csv") and rows and rows[0][:3] == ["report", "break_id", "class"],
              f"breaks.csv: {status} {kind} {rows[:1]}")
        check(any(r[2] == "amount_mismatch" and "ticket 7" in ",".join(r) for r in rows[1:]), f"breaks.csv has the resolved break: {rows}")

        submit(driver.find_element(By.CSS_SELECTOR, "form.sign-out button"))
        check(arrived("/console/sign-in"), f"signed out: {driver.current_url}")
        check(driver.get_cookie("ledgerd_console") is None, "signing out removes the session cookie")

        # Sign in as auditor: no write form anywhere on the order page; verify the chain; a forged POST is refused.
        # The sign-in form is looked for once the sign-out's 303 has landed (the twin of the wait below, which CI needed).
        WebDriverWait(driver, 15).until(lambda d: d.find_elements(By.ID, "key"))
        driver.find_element(By.ID, "key").send_keys(auditor)
        submit(driver.find_element(By.CSS_SELECTOR, "form[action='/console/sign-in'] button"))
        check(arrived("/console/today"), f"the auditor signed in: {driver.current_url}")
        check("auditor:" in driver.find_element(By.CLASS_NAME, "who").text, "the header names the auditor")
        driver.get(f"{base}/console/orders/{order}")
        forms = [f.get_attribute("action") for f in driver.find_elements(By.TAG_NAME, "form")]
        check(all(action.endswith("/console/sign-out") for action in forms), f"the auditor's order page has no write form: {forms}")
        check(not driver.find_elements(By.NAME, "idempotency_key"), "no action form for the auditor")
        shot("order-auditor")
        # No page offers the auditor a POST other than signing out.
        recorded_day = time.strftime("%Y-%m-%d", time.gmtime())
        for path in [
            "/console/today", "/console/orders", "/console/disputes", "/console/settlements",
            f"/console/settlements/{batch}", "/console/audit", "/console/audit/as-of", f"/console/audit/journal?day={recorded_day}",
        ]:
            driver.get(f"{base}{path}")
            posts = [f.get_attribute("action") for f in driver.find_elements(By.CSS_SELECTOR, "form[method='post']")]
            check(all(action.endswith("/console/sign-out") for action in posts), f"{path}: the auditor is offered {posts}")
            if path in ("/console/disputes", "/console/settlements"):
                shot(path.rsplit("/", 1)[1])
        driver.get(f"{base}/console/audit")
        labelled("audit")
        submit(driver.find_element(By.CSS_SELECTOR, "form[action='/console/audit'] button"))
        check(arrived("verify=1"), f"the verification ran: {driver.current_url}")
        check("The chain is intact" in driver.find_element(By.ID, "verify-result").text, "the auditor verifies the chain")
        steps = [step.text for step in driver.find_elements(By.CSS_SELECTOR, "#verify-progress li")]
        check(steps and all("intact" in step for step in steps), f"the verification's steps are listed: {steps}")
        shot("audit-verify")
        driver.get(f"{base}/console/audit")
        shot("audit")
        # The quick start order as of a moment just after its authorization, through the time picker: authorized then.
        status, text = api("GET", f"/orders/{order}/history", key=auditor)
        events = json.loads(text)["events"]
        authorized = next(event for event in events if event["type"] == "OrderAuthorized")
        captured = next(event for event in events if event["type"] == "HoldCaptured")
        # The whole second after the authorization was recorded (the ledger's time of recording; the capture came later).
        recorded = datetime.datetime.strptime(authorized["recorded_at"], "%Y-%m-%dT%H:%M:%S.%fZ")
        moment = (recorded.replace(microsecond=0) + datetime.timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%S")
        check(moment < captured["recorded_at"], f"the moment falls between authorization and capture: {moment} {captured['recorded_at']}")
        driver.find_element(By.ID, "as-of-order").send_keys(order)
        picker = driver.find_element(By.ID, "as-of-at")
        check(picker.get_attribute("type") == "datetime-local", "the moment is a time picker")
        # Typing into a date-time picker depends on the browser's locale; WebDriver sets its value as a person's
        # picking would (the page itself has no script).
        driver.execute_script("arguments[0].value = arguments[1]", picker, moment)
        submit(driver.find_element(By.CSS_SELECTOR, "#as-of-form button"))
        check(arrived("/console/audit/as-of"), f"the as-of page: {driver.current_url}")
        status_cell = driver.find_elements(By.ID, "order-status")
        check(status_cell and status_cell[0].text == "authorized",
              f"as of {moment}, the order was authorized: {driver.find_element(By.TAG_NAME, 'main').text[:600]}")
        check("HoldCaptured" not in driver.find_element(By.CLASS_NAME, "timeline").text, "as of then, no capture")
        check(not driver.find_elements(By.NAME, "idempotency_key"), "the as-of page has no action")
        shot("audit-as-of")
        # The journal is by the ledger's time of recording (the database's clock, not the rehearsal's).
        recorded_day = captured["recorded_at"][:10]
        driver.get(f"{base}/console/audit/journal?day={recorded_day}")
        check("HoldCaptured" in driver.find_element(By.ID, "journal-entries").text, "the day's journal has the captures")
        check("UNBALANCED" not in driver.find_element(By.ID, "journal-balance").text, "the day's journal balances")
        labelled("journal")
        shot("audit-journal")
        session = driver.get_cookie("ledgerd_console")["value"]
        csrf = driver.find_element(By.CSS_SELECTOR, "form.sign-out input[name='csrf_token']").get_attribute("value")
        before = head_position()
        forged = urllib.parse.urlencode({"csrf_token": csrf, "idempotency_key": "forged-1", "amount": "1.00", "reason": "forged"}).encode()
        for kind in ["refund", "void", "capture", "ship"]:
            status, headers, _ = http(
                "POST", f"{base}/console/orders/{order}/{kind}", forged,
                {"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"ledgerd_console={session}"},
            )
            check(status == 403, f"the auditor's forged {kind} is refused: {status}")
            check("default-src 'none'" in (headers.get("Content-Security-Policy") or ""), "the refusal carries the CSP")
        cookie_header = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"ledgerd_console={session}"}
        forged_form = urllib.parse.urlencode({"csrf_token": csrf, "close_now": "true", "reason": "forged", "evidence_refs": "x"}).encode()
        for path in ["/console/settlements/run", "/console/audit/checkpoints"]:
            status, headers, _ = http("POST", f"{base}{path}", forged_form, cookie_header)
            check(status == 403, f"the auditor's forged POST {path} is refused: {status}")
        boundary = "----forged"
        multipart = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"csrf_token\"\r\n\r\n{csrf}\r\n"
                     f"--{boundary}\r\nContent-Disposition: form-data; name=\"report\"; filename=\"r.csv\"\r\n\r\n{report}\r\n"
                     f"--{boundary}--\r\n").encode()
        status, _, _ = http("POST", f"{base}/console/reports", multipart,
                            {"Content-Type": f"multipart/form-data; boundary={boundary}", "Cookie": f"ledgerd_console={session}"})
        check(status == 403, f"the auditor's forged report upload is refused: {status}")
        check(head_position() == before, "the forged POSTs appended nothing")

        # Four days later (a rehearsal clock; always past the next business day, on which the acquirer raises the
        # chargeback of the settled capture): the dispute arrives through the acquirer's feed; the operator defends it.
        stop_daemon()
        later = time.gmtime(time.time() + 4 * 86400)
        start_daemon(time.strftime("%Y-%m-%dT09:00:00Z", later))
        dispute = None
        for _ in range(120):
            status, text = api("GET", "/disputes")
            found = json.loads(text).get("disputes", []) if status == 200 else []
            if found:
                dispute = found[0]["dispute_id"]
                break
            time.sleep(0.5)
        check(dispute is not None, "the acquirer's chargeback reached the ledger")
        driver.get(f"{base}/console/sign-in")
        driver.find_element(By.ID, "key").send_keys(operator)
        submit(driver.find_element(By.CSS_SELECTOR, "form[action='/console/sign-in'] button"))
        check(arrived("/console/today"), f"signed in again after the restart: {driver.current_url}")
        driver.get(f"{base}/console/disputes")
        labelled("disputes")
        shot("disputes")
        submit(driver.find_element(By.CSS_SELECTOR, f"a[href='/console/disputes/{dispute}']"))
        check(arrived(f"/console/disputes/{dispute}"), f"the dispute's page: {driver.current_url}")
        check("(overdue)" not in driver.find_element(By.ID, "dispute-status").text, "the deadline has not passed")
        labelled("dispute")
        before = head_position()
        driver.find_element(By.ID, "evidence-refs").send_keys("proof-of-delivery-UPS-1Z999AA10123456784")
        submit(driver.find_element(By.CSS_SELECTOR, "#defend-form button"))
        check(arrived("done=defend"), f"the defence was recorded: {driver.current_url}")
        check(head_position() > before, "the defence appended its event")
        status, text = api("GET", f"/disputes/{dispute}")
        check(status == 200 and "proof-of-delivery-UPS-1Z999AA10123456784" in text, f"GET /disputes/{{id}} has the evidence: {text[:400]}")
        shot("dispute-defended")
        status, kind, rows = console_csv("/console/disputes.csv")
        check(status == 200 and kind.startswith("text/csv") and any(r[0] == dispute for r in rows[1:]),
              f"disputes.csv lists the dispute: {status} {kind} {rows}")
        # The auditor: no answer offered, and a forged one refused.
        submit(driver.find_element(By.CSS_SELECTOR, "form.sign-out button"))
        # The sign-out's POST and its 303 take a moment after the click returns: the sign-in form is looked for on the
        # page it leads to (CI once found the dispute's page still there, and no key field).
        check(arrived("/console/sign-in"), f"signed out: {driver.current_url}")
        WebDriverWait(driver, 15).until(lambda d: d.find_elements(By.ID, "key"))
        driver.find_element(By.ID, "key").send_keys(auditor)
        submit(driver.find_element(By.CSS_SELECTOR, "form[action='/console/sign-in'] button"))
        check(arrived("/console/today"), f"the auditor signed in again: {driver.current_url}")
        driver.get(f"{base}/console/disputes/{dispute}")
        posts = [f.get_attribute("action") for f in driver.find_elements(By.CSS_SELECTOR, "form[method='post']")]
        check(all(action.endswith("/console/sign-out") for action in posts), f"the auditor is offered {posts} on the dispute")
        session = driver.get_cookie("ledgerd_console")["value"]
        csrf = driver.find_element(By.CSS_SELECTOR, "form.sign-out input[name='csrf_token']").get_attribute("value")
        before = head_position()
        forged_form = urllib.parse.urlencode({"csrf_token": csrf, "evidence_refs": "forged"}).encode()
        for answer in ["defend", "accept"]:
            status, _, _ = http("POST", f"{base}/console/disputes/{dispute}/{answer}", forged_form,
                                {"Content-Type": "application/x-www-form-urlencoded", "Cookie": f"ledgerd_console={session}"})
            check(status == 403, f"the auditor's forged {answer} is refused: {status}")
        check(head_position() == before, "the forged answers appended nothing")

        errors = unexpected + browser_errors()
        check(not errors, f"the browser's console has errors: {errors}")
        # The check above can fail: a page the console answers 404 is logged as an error, and seen.
        driver.get(f"{base}/console/no-such-page")
        check(any("404" in entry.get("message", "") for entry in browser_errors()), "the browser's console log is read")
    except Timeout as error:
        failures.append(str(error))
    except WebDriverException as error:
        # A missing element (NoSuchElementException) or a wait that ran out (TimeoutException): a failure of the
        # journey, recorded with the page it happened on, not a traceback past the summary.
        where = driver.current_url if driver is not None else "(no browser)"
        failures.append(f"{type(error).__name__} at {where}: {error.msg}")
        print(f"FAIL: {failures[-1]}", file=sys.stderr)
        try:
            shot("failure")
        except WebDriverException:
            pass
    finally:
        signal.alarm(0)
        if driver is not None:
            try:
                driver.quit()
            except Exception as error:  # noqa: BLE001 — the run's verdict stands; the driver is gone either way
                print(f"driver quit: {error}", file=sys.stderr)
        if daemon is not None:
            stop_daemon()
        log.close()
    elapsed = time.monotonic() - started
    if failures:
        print(f"console browser test FAILED in {elapsed:.0f} s ({len(failures)} failures); daemon log: {log.name}", file=sys.stderr)
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)
    print(f"console browser test passed in {elapsed:.0f} s; {shots} screenshots in {args.screenshots}")


if __name__ == "__main__":
    main()
