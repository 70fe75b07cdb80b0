#!/usr/bin/python3
"""The back-office console in a real browser (issue 32): headless Chromium driven over WebDriver against a real
`ledgerd serve` on a temporary data directory and a free port.

Why Python and Debian's python3-selenium rather than a Swift WebDriver client on AsyncHTTPClient: Selenium is the
maintained reference client of the W3C WebDriver protocol (sessions, capabilities, waits, the browser's console log,
cookies, screenshots), packaged by Debian beside chromium and chromium-driver, so the three come from one place at
matching versions; a hand-written Swift client would be protocol code that itself needs testing, and the test would
then check our client as much as the console. The journey below drives the daemon only through HTTP — the browser
for the console, plain HTTP for the API — exactly as people and the storefront do.

The journey: sign in as operator (the key from <data dir>/api-keys.json); make a payment through the API
(`POST /payment`, as the README's quick start); find the order in the console; capture it; check the page and the
ledger (`GET /orders/{id}` answers captured, the history holds the capture); sign in as auditor: the order page has no
write form, and a forged POST with the auditor's session and its own CSRF token is refused (403) with nothing
appended. Each page's screenshot goes to .build/console-screenshots/; the browser's console log must hold no error
(a Content-Security-Policy violation is logged there as one).

Bounded: the whole run stops after --timeout seconds (default 300); the daemon and the driver are stopped in every case.
Run from the repository: /usr/bin/python3 deploy/console/browser_test.py [--ledgerd .build/debug/ledgerd]
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


class Timeout(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    daemon = subprocess.Popen([args.ledgerd, "serve", "--data-dir", data, "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
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

    try:
        for _ in range(180):
            if daemon.poll() is not None:
                raise RuntimeError(f"ledgerd serve exited ({daemon.returncode}); log: {log.name}")
            try:
                if http("GET", f"{base}/health")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(1)
        else:
            raise RuntimeError("ledgerd did not answer /health")
        keys = json.load(open(os.path.join(data, "api-keys.json")))
        operator, auditor = keys["operator_keys"][0], keys["auditor_keys"][0]

        options = webdriver.ChromeOptions()
        for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,2400"]:
            options.add_argument(flag)
        options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
        driver.set_page_load_timeout(30)

        # Sign in as operator.
        driver.get(f"{base}/console/")
        check(driver.current_url.endswith("/console/sign-in"), "the console starts at sign-in")
        shot("sign-in")
        driver.find_element(By.ID, "key").send_keys(operator)
        driver.find_element(By.CSS_SELECTOR, "form[action='/console/sign-in'] button").click()
        check(arrived("/console/today"), f"signed in, Today: {driver.current_url}")
        check("operator:" in driver.find_element(By.CLASS_NAME, "who").text, "the header names the operator")
        cookie = driver.get_cookie("ledgerd_console")
        check(cookie is not None and cookie.get("httpOnly") and cookie.get("sameSite") == "Strict", f"session cookie flags: {cookie}")
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

        # Find it in the console and capture it.
        driver.get(f"{base}/console/orders")
        shot("orders")
        driver.find_element(By.ID, "order-id").send_keys(order)
        driver.find_element(By.CSS_SELECTOR, "form[role='search'] button").click()
        check(arrived(f"/console/orders/{order}"), f"found the order: {driver.current_url}")
        check(driver.find_element(By.ID, "order-status").text == "authorized", "the order is authorized")
        shot("order-authorized")
        before = head_position()
        driver.find_element(By.CSS_SELECTOR, "#capture-form button").click()
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
        driver.find_element(By.CSS_SELECTOR, "#ship-form button").click()
        check(arrived("?done=ship"), f"the shipment was recorded: {driver.current_url}")
        check(driver.find_element(By.ID, "order-status").text == "shipped", "the page says shipped")
        before = head_position()
        driver.find_element(By.ID, "refund-amount").send_keys("abc")
        driver.find_element(By.ID, "refund-reason").send_keys("scratched")
        driver.find_element(By.CSS_SELECTOR, "#refund-form button").click()
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
        driver.find_element(By.CSS_SELECTOR, "#refund-form button").click()
        check(arrived("?done=refund"), f"the refund was recorded: {driver.current_url}")
        check(driver.find_element(By.ID, "order-status").text == "partially_refunded", "the page says partially refunded")
        check(driver.find_element(By.ID, "figure-refunded").text == "10.00", "the hold's refunded figure")
        shot("order-refunded")
        status, _, text = http("GET", f"{base}/orders/{order}", headers={"Authorization": f"Bearer {operator}"})
        check(status == 200 and json.loads(text)["order"]["status"] == "partially_refunded", f"GET /orders/{{id}}: {text}")
        driver.find_element(By.CSS_SELECTOR, "form.sign-out button").click()
        check(arrived("/console/sign-in"), f"signed out: {driver.current_url}")
        check(driver.get_cookie("ledgerd_console") is None, "signing out removes the session cookie")

        # Sign in as auditor: no write form anywhere on the order page; verify the chain; a forged POST is refused.
        driver.find_element(By.ID, "key").send_keys(auditor)
        driver.find_element(By.CSS_SELECTOR, "form[action='/console/sign-in'] button").click()
        check(arrived("/console/today"), f"the auditor signed in: {driver.current_url}")
        check("auditor:" in driver.find_element(By.CLASS_NAME, "who").text, "the header names the auditor")
        driver.get(f"{base}/console/orders/{order}")
        forms = [f.get_attribute("action") for f in driver.find_elements(By.TAG_NAME, "form")]
        check(all(action.endswith("/console/sign-out") for action in forms), f"the auditor's order page has no write form: {forms}")
        check(not driver.find_elements(By.NAME, "idempotency_key"), "no action form for the auditor")
        shot("order-auditor")
        # No page offers the auditor a POST other than signing out.
        for path in ["/console/today", "/console/orders", "/console/disputes", "/console/settlements", "/console/audit"]:
            driver.get(f"{base}{path}")
            posts = [f.get_attribute("action") for f in driver.find_elements(By.CSS_SELECTOR, "form[method='post']")]
            check(all(action.endswith("/console/sign-out") for action in posts), f"{path}: the auditor is offered {posts}")
            if path in ("/console/disputes", "/console/settlements"):
                shot(path.rsplit("/", 1)[1])
        driver.get(f"{base}/console/audit")
        driver.find_element(By.CSS_SELECTOR, "form[action='/console/audit'] button").click()
        check(arrived("verify=1"), f"the verification ran: {driver.current_url}")
        check("The chain is intact" in driver.find_element(By.ID, "verify-result").text, "the auditor verifies the chain")
        shot("audit")
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
        check(head_position() == before, "the forged POSTs appended nothing")

        errors = unexpected + browser_errors()
        check(not errors, f"the browser's console has errors: {errors}")
        # The check above can fail: a page the console answers 404 is logged as an error, and seen.
        driver.get(f"{base}/console/no-such-page")
        check(any("404" in entry.get("message", "") for entry in browser_errors()), "the browser's console log is read")
    except Timeout as error:
        failures.append(str(error))
    finally:
        signal.alarm(0)
        if driver is not None:
            try:
                driver.quit()
            except Exception as error:  # noqa: BLE001 — the run's verdict stands; the driver is gone either way
                print(f"driver quit: {error}", file=sys.stderr)
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
        log.close()
    elapsed = time.monotonic() - started
    if failures:
        print(f"console browser test FAILED in {elapsed:.0f} s ({len(failures)} failures); daemon log: {log.name}", file=sys.stderr)
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)
    print(f"console browser test passed in {elapsed:.0f} s; {shots} screenshots in {args.screenshots}")


if __name__ == "__main__":
    main()
