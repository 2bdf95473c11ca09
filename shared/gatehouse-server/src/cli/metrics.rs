//! `serve --metrics-addr ADDR`: the calls this process served, as a Prometheus text scrape on an
//! address of its own (ADR 54). Counted from the pipeline's one event per tool call
//! (`gatehouse::call`), the same event Lambda turns into embedded metric format lines: by tool,
//! its effect class and the outcome (`ok`, or the error's code, which names the gate that
//! refused: `rate_limited`, `kill_switch`, ...). No tenant, connection or member is a label: their number is unbounded
//! and they say who did what. Off unless asked for: without the flag no layer is installed.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use store::{Delete, Item, Key, Page, Put, Query, Store, StoreError, TransactOp, Update};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// The pipeline's per-call event.
const CALL_TARGET: &str = "gatehouse::call";
/// The histogram's upper bounds, in seconds (from half a millisecond to ten seconds).
const BOUNDS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// The bounds of a confirmation's wait from its preview to its decision, in seconds (a second
/// to a day: a person may answer much later than a call takes).
const WAIT_BOUNDS: [f64; 14] = [
    1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0,
    86400.0,
];
/// The pipeline's event for each decision on a pending action.
const CONFIRMATION_TARGET: &str = "gatehouse::confirmation";
/// Series kept at most; calls past it are counted under the tool `other`, so that no client
/// can grow the scrape without bound.
const MAX_SERIES: usize = 1_000;

/// Which calls a series counts: the tool, its effect class, the outcome.
type SeriesKey = (String, String, String);

/// One tool and outcome's calls.
#[derive(Debug, Default, Clone)]
struct Series {
    count: u64,
    sum_seconds: f64,
    /// Calls at or under each bound of [`BOUNDS`] (not cumulative; summed when written).
    buckets: [u64; BOUNDS.len()],
}

/// What this process counted.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    series: Mutex<BTreeMap<SeriesKey, Series>>,
    /// Store operations by name (`get`, `batch_get`, `transact`, ...).
    store: Mutex<BTreeMap<&'static str, Series>>,
    /// Outbox deliveries by outcome (`delivered`, `retried`, `dead`).
    deliveries: Mutex<BTreeMap<&'static str, u64>>,
    /// Decisions on pending actions by path and decision; their waits by path.
    decisions: Mutex<BTreeMap<(String, String), u64>>,
    waits: Mutex<BTreeMap<String, Series>>,
}

static INSTALLED: OnceLock<Arc<Metrics>> = OnceLock::new();

fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Series {
    fn observe(&mut self, seconds: f64) {
        self.observe_in(seconds, &BOUNDS);
    }

    fn observe_in(&mut self, seconds: f64, bounds: &[f64; BOUNDS.len()]) {
        self.count += 1;
        self.sum_seconds += seconds;
        if let Some(bucket) = bounds.iter().position(|bound| seconds <= *bound) {
            self.buckets[bucket] += 1;
        }
    }

    /// The histogram's lines for `labels`.
    fn write(&self, out: &mut String, name: &str, labels: &str) {
        self.write_in(out, name, labels, &BOUNDS);
    }

    fn write_in(&self, out: &mut String, name: &str, labels: &str, bounds: &[f64; BOUNDS.len()]) {
        let mut below = 0;
        for (bound, calls) in bounds.iter().zip(self.buckets) {
            below += calls;
            out.push_str(&format!(
                "{name}_bucket{{{labels},le=\"{bound}\"}} {below}\n"
            ));
        }
        let count = self.count;
        out.push_str(&format!("{name}_bucket{{{labels},le=\"+Inf\"}} {count}\n"));
        out.push_str(&format!("{name}_sum{{{labels}}} {}\n", self.sum_seconds));
        out.push_str(&format!("{name}_count{{{labels}}} {count}\n"));
    }
}

impl Metrics {
    /// The process's metrics, made on first use (by the tracing setup when `serve` was asked
    /// for them).
    pub(crate) fn installed() -> Arc<Metrics> {
        Arc::clone(INSTALLED.get_or_init(Arc::default))
    }

    /// The process's metrics if `serve` was asked for them.
    pub(crate) fn active() -> Option<Arc<Metrics>> {
        INSTALLED.get().cloned()
    }

    fn count(&self, call: SeriesKey, seconds: f64) {
        let mut series = locked(&self.series);
        let key = if series.len() >= MAX_SERIES && !series.contains_key(&call) {
            ("other".to_owned(), "other".to_owned(), "other".to_owned())
        } else {
            call
        };
        series.entry(key).or_default().observe(seconds);
    }

    fn decided(&self, path: String, decision: String, wait_seconds: f64) {
        // Paths and decisions are the pipeline's own words, a handful of each.
        *locked(&self.decisions)
            .entry((path.clone(), decision))
            .or_default() += 1;
        locked(&self.waits)
            .entry(path)
            .or_default()
            .observe_in(wait_seconds, &WAIT_BOUNDS);
    }

    /// Counts what one outbox sweep did.
    pub(crate) fn swept(&self, swept: &outbox::Swept) {
        let mut deliveries = locked(&self.deliveries);
        for (outcome, n) in [
            ("delivered", swept.delivered),
            ("retried", swept.retrying),
            ("dead", swept.dead),
        ] {
            *deliveries.entry(outcome).or_default() += n as u64;
        }
    }

    /// The scrape, in Prometheus' text format 0.0.4.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        self.render_calls(&mut out);
        out.push_str(
            "# HELP gatehouse_store_operation_duration_seconds Store operations this process made, by operation.\n\
             # TYPE gatehouse_store_operation_duration_seconds histogram\n",
        );
        for (operation, one) in locked(&self.store).iter() {
            let labels = format!("operation=\"{operation}\"");
            one.write(
                &mut out,
                "gatehouse_store_operation_duration_seconds",
                &labels,
            );
        }
        out.push_str(
            "# HELP gatehouse_outbox_deliveries_total Outbox messages this process's sweeps delivered, retried or dead-lettered.\n\
             # TYPE gatehouse_outbox_deliveries_total counter\n",
        );
        for (outcome, n) in locked(&self.deliveries).iter() {
            out.push_str(&format!(
                "gatehouse_outbox_deliveries_total{{outcome=\"{outcome}\"}} {n}\n"
            ));
        }
        self.render_decisions(&mut out);
        out
    }

    fn render_decisions(&self, out: &mut String) {
        out.push_str(
            "# HELP gatehouse_confirmations_total Decisions on prepared actions, by where they were taken and what was decided.\n\
             # TYPE gatehouse_confirmations_total counter\n",
        );
        for ((path, decision), n) in locked(&self.decisions).iter() {
            let (path, decision) = (escape(path), escape(decision));
            out.push_str(&format!(
                "gatehouse_confirmations_total{{path=\"{path}\",decision=\"{decision}\"}} {n}\n"
            ));
        }
        out.push_str(
            "# HELP gatehouse_confirmation_wait_seconds Time from an action's preview to its decision.\n\
             # TYPE gatehouse_confirmation_wait_seconds histogram\n",
        );
        for (path, one) in locked(&self.waits).iter() {
            let labels = format!("path=\"{}\"", escape(path));
            one.write_in(
                out,
                "gatehouse_confirmation_wait_seconds",
                &labels,
                &WAIT_BOUNDS,
            );
        }
    }

    fn render_calls(&self, out: &mut String) {
        let series = locked(&self.series).clone();
        out.push_str(
            "# HELP gatehouse_calls_total Tool calls this process answered, by tool, effect class and outcome (ok, or the error's code).\n\
             # TYPE gatehouse_calls_total counter\n",
        );
        for ((tool, effect, outcome), one) in &series {
            let (tool, effect, outcome) = (escape(tool), escape(effect), escape(outcome));
            out.push_str(&format!(
                "gatehouse_calls_total{{tool=\"{tool}\",effect_class=\"{effect}\",outcome=\"{outcome}\"}} {}\n",
                one.count
            ));
        }
        out.push_str(
            "# HELP mcp_server_operation_duration_seconds Time from a tool call's request to its answer.\n\
             # TYPE mcp_server_operation_duration_seconds histogram\n",
        );
        for ((tool, _, outcome), one) in &series {
            let labels = format!(
                "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"{}\",outcome=\"{}\"",
                escape(tool),
                escape(outcome)
            );
            one.write(out, "mcp_server_operation_duration_seconds", &labels);
        }
    }
}

/// The store `serve` runs on, each operation timed into [`Metrics`] (only when the scrape was
/// asked for: otherwise `serve` uses the store unwrapped).
#[derive(Debug)]
pub(crate) struct TimedStore {
    inner: Arc<dyn Store>,
    metrics: Arc<Metrics>,
}

impl TimedStore {
    pub(crate) fn new(inner: Arc<dyn Store>, metrics: Arc<Metrics>) -> TimedStore {
        TimedStore { inner, metrics }
    }

    async fn timed<T>(&self, operation: &'static str, work: impl Future<Output = T>) -> T {
        let started = std::time::Instant::now();
        let answer = work.await;
        let seconds = started.elapsed().as_secs_f64();
        locked(&self.metrics.store)
            .entry(operation)
            .or_default()
            .observe(seconds);
        answer
    }
}

#[async_trait::async_trait]
impl Store for TimedStore {
    async fn get(&self, key: &Key) -> Result<Option<Item>, StoreError> {
        self.timed("get", self.inner.get(key)).await
    }
    async fn batch_get(&self, keys: &[Key]) -> Result<Vec<Option<Item>>, StoreError> {
        self.timed("batch_get", self.inner.batch_get(keys)).await
    }
    async fn put(&self, put: Put) -> Result<(), StoreError> {
        self.timed("put", self.inner.put(put)).await
    }
    async fn update(&self, update: Update) -> Result<Item, StoreError> {
        self.timed("update", self.inner.update(update)).await
    }
    async fn delete(&self, delete: Delete) -> Result<Option<Item>, StoreError> {
        self.timed("delete", self.inner.delete(delete)).await
    }
    async fn query(&self, query: Query) -> Result<Page, StoreError> {
        self.timed("query", self.inner.query(query)).await
    }
    async fn transact_write(&self, ops: Vec<TransactOp>) -> Result<(), StoreError> {
        self.timed("transact", self.inner.transact_write(ops)).await
    }
    async fn batch_get_derived(
        &self,
        keys: &[Key],
        more: &[Key],
        derivation: store::Derivation<'_>,
    ) -> Result<(store::Derived, Vec<Option<Item>>), StoreError> {
        // Forwarded whole, so that what the backend keeps (ADR 32) still holds.
        let read = self.inner.batch_get_derived(keys, more, derivation);
        self.timed("batch_get", read).await
    }
}

/// A label value as the text format wants it.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The layer that counts each `gatehouse::call` event into [`Metrics::installed`].
pub(crate) struct CallCounter(Arc<Metrics>);

impl CallCounter {
    pub(crate) fn new() -> CallCounter {
        CallCounter(Metrics::installed())
    }
}

impl<S: Subscriber> Layer<S> for CallCounter {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let target = event.metadata().target();
        if target != CALL_TARGET && target != CONFIRMATION_TARGET {
            return;
        }
        let mut fields = CallFields::default();
        event.record(&mut fields);
        let text = |field: Option<String>| field.unwrap_or_else(|| "-".to_owned());
        if target == CONFIRMATION_TARGET {
            let wait = fields.wait_seconds.unwrap_or_default();
            self.0
                .decided(text(fields.path), text(fields.decision), wait);
        } else if let Some(tool) = fields.tool {
            let seconds = fields.duration_ms.unwrap_or_default() / 1000.0;
            let (effect, outcome) = (text(fields.effect), text(fields.outcome));
            self.0.count((tool, effect, outcome), seconds);
        }
    }
}

/// The fields of a call's or a decision's event.
#[derive(Default)]
struct CallFields {
    tool: Option<String>,
    effect: Option<String>,
    outcome: Option<String>,
    duration_ms: Option<f64>,
    path: Option<String>,
    decision: Option<String>,
    wait_seconds: Option<f64>,
}

impl Visit for CallFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.record_text(field, value.to_owned());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        match field.name() {
            "duration_ms" => self.duration_ms = Some(value),
            "wait_seconds" => self.wait_seconds = Some(value),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        // `outcome = %outcome` arrives here, written as its Display.
        self.record_text(field, format!("{value:?}"));
    }
}

impl CallFields {
    fn record_text(&mut self, field: &Field, value: String) {
        match field.name() {
            "tool" => self.tool = Some(value),
            "effect" => self.effect = Some(value),
            "path" => self.path = Some(value),
            "decision" => self.decision = Some(value),
            "outcome" => self.outcome = Some(value),
            _ => {}
        }
    }
}

/// Answers `GET /metrics` on `listener` with the scrape, anything else with 404, until the
/// process ends.
pub(crate) async fn serve(listener: tokio::net::TcpListener, metrics: Arc<Metrics>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors, say: wait a little rather than spin.
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            continue;
        };
        let metrics = Arc::clone(&metrics);
        tokio::spawn(async move {
            let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                let metrics = Arc::clone(&metrics);
                async move {
                    let found = req.method() == http::Method::GET && req.uri().path() == "/metrics";
                    let response = if found {
                        mcp_http::text(
                            http::StatusCode::OK,
                            "text/plain; version=0.0.4; charset=utf-8",
                            metrics.render(),
                        )
                    } else {
                        mcp_http::text(
                            http::StatusCode::NOT_FOUND,
                            "text/plain; charset=utf-8",
                            "the scrape is at /metrics\n".to_owned(),
                        )
                    };
                    Ok::<_, std::convert::Infallible>(response)
                }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(tool: &str, outcome: &str) -> SeriesKey {
        (tool.to_owned(), "read".to_owned(), outcome.to_owned())
    }

    #[test]
    fn calls_store_operations_and_deliveries_are_written_as_prometheus_text() {
        let metrics = Metrics::default();
        metrics.count(key("find_customers", "ok"), 0.002);
        metrics.count(key("find_customers", "ok"), 0.2);
        metrics.count(key("find \"x\"", "rate_limited"), 0.0001);
        locked(&metrics.store)
            .entry("get")
            .or_default()
            .observe(0.0004);
        metrics.decided("client".into(), "confirmed".into(), 42.0);
        metrics.swept(&outbox::Swept {
            delivered: 2,
            retrying: 1,
            dead: 0,
            skipped: 5,
        });
        let text = metrics.render();
        let has = |line: &str| assert!(text.contains(&format!("{line}\n")), "{line}:\n{text}");
        has(r#"gatehouse_calls_total{tool="find_customers",effect_class="read",outcome="ok"} 2"#);
        has(
            r#"gatehouse_calls_total{tool="find \"x\"",effect_class="read",outcome="rate_limited"} 1"#,
        );
        let labels =
            r#"mcp_method_name="tools/call",gen_ai_tool_name="find_customers",outcome="ok""#;
        has(&format!(
            "mcp_server_operation_duration_seconds_bucket{{{labels},le=\"0.0025\"}} 1"
        ));
        has(&format!(
            "mcp_server_operation_duration_seconds_bucket{{{labels},le=\"0.25\"}} 2"
        ));
        has(&format!(
            "mcp_server_operation_duration_seconds_count{{{labels}}} 2"
        ));
        has(r#"gatehouse_store_operation_duration_seconds_bucket{operation="get",le="0.0005"} 1"#);
        has(r#"gatehouse_outbox_deliveries_total{outcome="delivered"} 2"#);
        has(r#"gatehouse_outbox_deliveries_total{outcome="retried"} 1"#);
        has(r#"gatehouse_outbox_deliveries_total{outcome="dead"} 0"#);
        has(r#"gatehouse_confirmations_total{path="client",decision="confirmed"} 1"#);
        has(r#"gatehouse_confirmation_wait_seconds_bucket{path="client",le="30"} 0"#);
        has(r#"gatehouse_confirmation_wait_seconds_bucket{path="client",le="60"} 1"#);
    }

    #[test]
    fn series_past_the_cap_are_counted_as_other() {
        let metrics = Metrics::default();
        for n in 0..MAX_SERIES + 5 {
            metrics.count(key(&format!("tool_{n}"), "ok"), 0.001);
        }
        let text = metrics.render();
        assert!(
            text.contains(
                r#"gatehouse_calls_total{tool="other",effect_class="other",outcome="other"} 5"#
            ),
            "{text}"
        );
        assert_eq!(locked(&metrics.series).len(), MAX_SERIES + 1);
    }
}
