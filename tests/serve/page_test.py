"""The page of loom-serve in a real headless browser (Chromium through
Selenium and chromedriver): type sentences, click Translate, read the
translation, which must be what loom-translate prints for them.

  page_test.py --folder EXPORTED --inputs SRC --work DIR [--screenshot PNG]
               [--lines N]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service as ChromeService
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def start_server(folder, flags):
    proc = subprocess.Popen([os.path.join(folder, "loom-serve"), "--port", "0",
                             "--threads", "1"] + flags,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    port = None
    for line in proc.stderr:
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            port = int(m.group(1))
        if "ready in" in line:
            break
    if port is None:
        raise AssertionError("the server did not start")
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    return proc, port


def browser(work):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    # No sandbox as root; nothing reaches outside the machine.
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1100,560",
                 "--user-data-dir=" + tempfile.mkdtemp(dir=work)]:
        options.add_argument(flag)
    return webdriver.Chrome(service=ChromeService("/usr/bin/chromedriver"), options=options)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--folder", required=True)
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--screenshot")
    parser.add_argument("--lines", type=int, default=3)
    parser.add_argument("--api-key-file")
    args = parser.parse_args()
    with open(args.inputs, encoding="utf-8") as f:
        lines = f.read().split("\n")[:args.lines]
    expected = subprocess.run([os.path.join(args.folder, "loom-translate"), "--threads", "1"],
                              input="\n".join(lines) + "\n", check=True, capture_output=True,
                              text=True).stdout.split("\n")[:-1]
    flags, query = [], ""
    if args.api_key_file:
        flags = ["--api-key-file", args.api_key_file]
        with open(args.api_key_file) as f:
            query = "?api_key=" + f.readline().strip()
    proc, port = start_server(args.folder, flags)
    driver = browser(args.work)
    try:
        driver.get("http://127.0.0.1:%d/%s" % (port, query))
        assert driver.title == "Loom translator", driver.title
        source = driver.find_element(By.ID, "source")
        source.send_keys("\n".join(lines))
        driver.find_element(By.ID, "translate").click()
        target = driver.find_element(By.ID, "target")
        status = driver.find_element(By.ID, "status")
        try:
            WebDriverWait(driver, 60).until(
                lambda d: target.text.strip() != "" or status.get_attribute("class") == "error")
        except Exception:
            raise AssertionError("no translation; the page says: " + status.text)
        assert status.get_attribute("class") != "error", status.text
        got = target.text.split("\n")
        assert got == expected, (got, expected)
        assert status.text.startswith("Translated %d line(s)" % len(lines)), status.text
        if args.screenshot:
            driver.save_screenshot(args.screenshot)
        print("PASS the page translates what was typed, as loom-translate does")
    finally:
        driver.quit()
        proc.terminate()
        assert proc.wait(30) == 0


if __name__ == "__main__":
    main()
