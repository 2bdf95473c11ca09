// A person approves an agent's prepared action in the product's page, in headless Chromium.
//
//   PLAYWRIGHT_MODULES=DIR node approve.mjs BASE_URL APPROVAL_PATH SCREENSHOT_DIR [SECOND_PATH]
//
// Signs in as the demo owner of acme, opens the approval link, checks the summary, approves,
// approves the second link the same way (a non-money action in product mode), takes
// screenshots of the approval, connections and agent access pages, makes a connection and
// copies its token with the page's button, then turns agent access off.
// Prints one JSON line with what it saw; exits non-zero on any surprise.
import { createRequire } from "node:module";
import path from "node:path";

const [base, approvalPath, shots, secondPath] = process.argv.slice(2);
const modules = process.env.PLAYWRIGHT_MODULES;
if (!base || !approvalPath || !shots || !modules) {
  console.error("usage: PLAYWRIGHT_MODULES=DIR node approve.mjs BASE_URL APPROVAL_PATH SCREENSHOT_DIR");
  process.exit(2);
}
const require = createRequire(path.join(modules, "..", "package.json"));
const { chromium } = require("playwright-core");

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const seen = {};
try {
  const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
  await page.goto(`${base}/app/login?next=${approvalPath}`);
  await page.fill("input[name=tenant]", "acme");
  await page.fill("input[name=member]", "olivia");
  await page.fill("input[name=password]", "gatehouse-demo");
  await Promise.all([page.waitForURL(`**${approvalPath}`), page.click("button[type=submit]")]);
  seen.summary = (await page.textContent(".box p")) ?? "";
  const approvalText = (await page.textContent("body")) ?? "";
  seen.lines_shown = approvalText.includes("Filter") && approvalText.includes("gross");
  await page.screenshot({ path: path.join(shots, "approval-page.png"), fullPage: true });
  // The inbox lists what waits; at phone width nothing runs off the screen.
  await page.goto(`${base}/app/approvals`);
  seen.inbox_rows = (await page.locator("table tr").count()) - 1;
  seen.inbox_text = (await page.textContent("body")) ?? "";
  await page.screenshot({ path: path.join(shots, "approvals-inbox.png"), fullPage: true });
  const phone = await browser.newPage({ viewport: { width: 390, height: 844 }, isMobile: true });
  await phone.context().addCookies(await page.context().cookies());
  const fits = () => phone.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1);
  await phone.goto(`${base}/app/approvals`);
  seen.phone_inbox_fits = await fits();
  await phone.screenshot({ path: path.join(shots, "phone-approvals-inbox.png"), fullPage: true });
  await phone.goto(`${base}${approvalPath}`);
  seen.phone_approval_fits = await fits();
  await phone.screenshot({ path: path.join(shots, "phone-approval-page.png"), fullPage: true });
  await phone.close();
  await page.goto(`${base}${approvalPath}`);
  await Promise.all([page.waitForLoadState("load"), page.click("button[value=approve]")]);
  await page.waitForSelector("text=Done.");
  seen.approved = (await page.textContent("body")).includes("Done.");
  await page.screenshot({ path: path.join(shots, "approval-done.png"), fullPage: true });
  if (secondPath) {
    await page.goto(`${base}${secondPath}`);
    seen.cancellation_summary = (await page.textContent(".box p")) ?? "";
    await Promise.all([page.waitForLoadState("load"), page.click("button[value=approve]")]);
    await page.waitForSelector("text=Done.");
    seen.cancellation_approved = (await page.textContent("body")).includes("Done.");
    await page.screenshot({ path: path.join(shots, "cancellation-done.png"), fullPage: true });
  }
  await page.goto(`${base}/app/connections`);
  seen.connections = await page.locator("table tr").count();
  await page.screenshot({ path: path.join(shots, "connections-page.png"), fullPage: true });
  // A new connection's token is copied by its button: the page's script runs under the
  // pages' content security policy (an inline script did not), and nothing it loads is refused.
  const refused = [];
  page.on("console", (m) => { if (m.text().includes("Content Security Policy")) refused.push(m.text()); });
  await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
  await page.fill("input[name=client]", "browser test");
  await Promise.all([page.waitForLoadState("load"), page.click("button:text-is(\"Create\")")]);
  await page.click("button[data-copy=token]");
  await page.waitForSelector("button[data-copy=token]:text-is(\"Copied\")", { timeout: 5000 });
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  seen.token_copied = copied.length > 0 && copied === (await page.textContent("#token"));
  seen.csp_refusals = refused;
  await page.screenshot({ path: path.join(shots, "new-connection.png"), fullPage: true });
  await page.goto(`${base}/app/agent-access`);
  await page.screenshot({ path: path.join(shots, "agent-access-page.png"), fullPage: true });
  await Promise.all([page.waitForLoadState("load"), page.click("text=Turn agent access off")]);
  await page.waitForSelector("text=Agent access is off");
  seen.agent_access = "off";
  console.log(JSON.stringify(seen));
} catch (e) {
  console.error(`browser: ${e}`);
  console.log(JSON.stringify(seen));
  process.exitCode = 1;
} finally {
  await browser.close();
}
