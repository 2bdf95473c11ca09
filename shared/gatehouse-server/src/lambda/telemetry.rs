//! Logs and metrics on Lambda: every line the function prints on stdout is one JSON object.
//!
//! - [`JsonLogLayer`] writes each tracing event as `{"timestamp", "level", "target", "message",
//!   "aws_request_id"?, "fields"}`. The Lambda request id comes from the runtime's
//!   `Lambda runtime invoke` span. The per-call events (target `gatehouse::call`) keep only
//!   [`CALL_FIELDS`], so a field added there later (arguments, results) never reaches the logs.
//! - [`EmfLayer`] writes, for each `gatehouse::call` event, a CloudWatch embedded metric format
//!   object: namespace `gatehouse`, dimensions `tool` × `outcome`, metrics `calls` (Count) and
//!   `duration_ms` (Milliseconds). CloudWatch Logs turns these lines into metrics; no API call.
//!
//! The EMF layer has its own filter, so `GATEHOUSE_LOG=warn` quiets the logs but not the metrics.
//! Panics are logged through tracing too (see [`install_panic_hook`]), so not even a panic writes
//! a line that is not JSON.

use std::io::Write as _;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{EnvFilter, FilterExt as _, Targets, filter_fn};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The target of the pipeline's one event per tool call.
pub(crate) const CALL_TARGET: &str = "gatehouse::call";
/// The fields a `gatehouse::call` line may carry; any other field of that event is dropped.
pub(crate) const CALL_FIELDS: [&str; 7] = [
    "request_id",
    "tenant",
    "connection",
    "tool",
    "effect",
    "outcome",
    "duration_ms",
];
/// The CloudWatch namespace of the metrics.
pub(crate) const NAMESPACE: &str = "gatehouse";
/// The span `lambda_runtime` opens around each invocation, and its request id field.
const INVOKE_SPAN: &str = "Lambda runtime invoke";
const INVOKE_SPAN_REQUEST_ID: &str = "requestId";

/// Where finished lines go.
pub(crate) trait Sink: Send + Sync + 'static {
    /// Writes one line (without its newline).
    fn line(&self, line: &str);
}

/// Standard output, where Lambda collects a function's logs (and CloudWatch finds EMF).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stdout;

impl Sink for Stdout {
    fn line(&self, line: &str) {
        let mut buf = String::with_capacity(line.len() + 1);
        buf.push_str(line);
        buf.push('\n');
        // One write per line under the lock: lines never interleave. A failed write to stdout
        // has nowhere else to be reported.
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(buf.as_bytes());
        let _ = out.flush();
    }
}

/// The fields of an event or span, as JSON values.
#[derive(Debug, Default)]
struct Fields(Map<String, Value>);

impl Visit for Fields {
    fn record_f64(&mut self, field: &Field, value: f64) {
        let number = serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number);
        self.0.insert(field.name().to_owned(), number);
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), json!(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), json!(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), json!(value));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), json!(value));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0
            .insert(field.name().to_owned(), json!(value.to_string()));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_owned(), json!(format!("{value:?}")));
    }
}

/// A span's fields, kept in its extensions for the events inside it.
#[derive(Debug)]
struct SpanFields(Map<String, Value>);

fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Writes every event as one JSON object.
#[derive(Debug)]
pub(crate) struct JsonLogLayer<K> {
    sink: K,
}

impl<K: Sink> JsonLogLayer<K> {
    pub(crate) fn new(sink: K) -> Self {
        JsonLogLayer { sink }
    }
}

impl<S, K> Layer<S> for JsonLogLayer<K>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    K: Sink,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanFields(fields.0));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut extensions = span.extensions_mut();
        if let Some(SpanFields(map)) = extensions.get_mut::<SpanFields>() {
            let mut fields = Fields(std::mem::take(map));
            values.record(&mut fields);
            *map = fields.0;
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let meta = event.metadata();
        let mut fields = Fields::default();
        event.record(&mut fields);
        let mut fields = fields.0;
        let message = match fields.remove("message") {
            Some(Value::String(s)) => s,
            Some(other) => other.to_string(),
            None => String::new(),
        };
        if meta.target() == CALL_TARGET {
            // Only these, always in this order.
            fields = CALL_FIELDS
                .iter()
                .filter_map(|name| Some(((*name).to_owned(), fields.remove(*name)?)))
                .collect();
        }
        let mut line = Map::new();
        line.insert("timestamp".into(), json!(now_rfc3339()));
        line.insert("level".into(), json!(meta.level().as_str()));
        line.insert("target".into(), json!(meta.target()));
        line.insert("message".into(), json!(message));
        if let Some(id) = aws_request_id(event, &ctx) {
            line.insert("aws_request_id".into(), id);
        }
        line.insert("fields".into(), Value::Object(fields));
        self.sink.line(&Value::Object(line).to_string());
    }
}

/// The Lambda request id of the invocation the event happened in, if any.
fn aws_request_id<S>(event: &Event<'_>, ctx: &Context<'_, S>) -> Option<Value>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let scope = ctx.event_scope(event)?;
    for span in scope {
        if let Some(SpanFields(map)) = span.extensions().get::<SpanFields>()
            && let Some(id) = map.get(INVOKE_SPAN_REQUEST_ID)
        {
            return Some(id.clone());
        }
    }
    None
}

/// Writes one CloudWatch embedded-metric-format object per `gatehouse::call` event.
#[derive(Debug)]
pub(crate) struct EmfLayer<K> {
    sink: K,
}

impl<K: Sink> EmfLayer<K> {
    pub(crate) fn new(sink: K) -> Self {
        EmfLayer { sink }
    }
}

impl<S, K> Layer<S> for EmfLayer<K>
where
    S: Subscriber,
    K: Sink,
{
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        if event.metadata().target() != CALL_TARGET {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let text = |name: &str| {
            fields
                .0
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or("-")
                .to_owned()
        };
        let duration = fields
            .0
            .get("duration_ms")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let line = json!({
            "_aws": {
                "Timestamp": chrono::Utc::now().timestamp_millis(),
                "CloudWatchMetrics": [{
                    "Namespace": NAMESPACE,
                    "Dimensions": [["tool", "outcome"]],
                    "Metrics": [
                        {"Name": "calls", "Unit": "Count"},
                        {"Name": "duration_ms", "Unit": "Milliseconds"}
                    ]
                }]
            },
            "tool": text("tool"),
            "outcome": text("outcome"),
            "calls": 1,
            "duration_ms": duration,
        });
        self.sink.line(&line.to_string());
    }
}

/// The logs' filter: `filter` (the `GATEHOUSE_LOG` directives), plus always the runtime's
/// invocation span, so that even a `warn` line carries its Lambda request id.
fn log_filter<S>(filter: EnvFilter) -> impl tracing_subscriber::layer::Filter<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    filter.or(filter_fn(|meta| {
        meta.is_span() && meta.name() == INVOKE_SPAN
    }))
}

/// The metrics' filter: the per-call events only, whatever the log level.
fn metric_filter() -> Targets {
    Targets::new().with_target(CALL_TARGET, Level::INFO)
}

/// Installs the JSON logs and the EMF metrics as the global subscriber, with `filter` (already
/// checked by the configuration; an invalid one falls back to `info`), and the panic hook.
pub(crate) fn init(filter: &str) {
    let filter = EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let sink = Arc::new(Stdout);
    let _ = tracing_subscriber::registry()
        .with(JsonLogLayer::new(Arc::clone(&sink)).with_filter(log_filter(filter)))
        .with(EmfLayer::new(sink).with_filter(metric_filter()))
        .try_init();
    install_panic_hook();
}

impl<K: Sink> Sink for Arc<K> {
    fn line(&self, line: &str) {
        K::line(self, line);
    }
}

/// Replaces the default panic hook (plain text on stderr) with an ERROR event, so a panic is one
/// JSON line like everything else. The pipeline still catches a tool's panic and answers with a
/// generic error; this only changes how the panic is reported.
pub(crate) fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".to_owned());
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        tracing::error!(target: "gatehouse::panic", location, "panic: {text}");
    }));
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Debug, Clone, Default)]
    struct Captured(Arc<Mutex<Vec<String>>>);

    impl Sink for Captured {
        fn line(&self, line: &str) {
            self.0.lock().unwrap().push(line.to_owned());
        }
    }

    impl Captured {
        fn lines(&self) -> Vec<Value> {
            self.0
                .lock()
                .unwrap()
                .iter()
                .map(|l| {
                    assert!(!l.contains('\n'), "one line: {l}");
                    serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))
                })
                .collect()
        }
    }

    /// Runs `f` under the production layers and filters, writing to two captures.
    fn capture(filter: &str, f: impl FnOnce()) -> (Vec<Value>, Vec<Value>) {
        let logs = Captured::default();
        let metrics = Captured::default();
        let subscriber = tracing_subscriber::registry()
            .with(JsonLogLayer::new(logs.clone()).with_filter(log_filter(EnvFilter::new(filter))))
            .with(EmfLayer::new(metrics.clone()).with_filter(metric_filter()));
        tracing::subscriber::with_default(subscriber, f);
        (logs.lines(), metrics.lines())
    }

    fn call_event() {
        tracing::info!(
            target: "gatehouse::call",
            duration_ms = 12.5,
            request_id = %7,
            tenant = "acme",
            connection = "con_1",
            tool = "get_server_status",
            effect = "read",
            outcome = %"ok",
            arguments = "{\"secret\":\"do not log\"}",
            "tool call"
        );
    }

    #[test]
    fn a_call_event_is_one_json_line_with_its_fields_and_no_arguments() {
        let (logs, _) = capture("info", || {
            let span = tracing::info_span!("Lambda runtime invoke", requestId = "aws-req-1");
            let _entered = span.enter();
            call_event();
        });
        assert_eq!(logs.len(), 1, "{logs:?}");
        let line = &logs[0];
        let keys: Vec<&str> = line
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "timestamp",
                "level",
                "target",
                "message",
                "aws_request_id",
                "fields"
            ]
        );
        assert!(
            chrono::DateTime::parse_from_rfc3339(line["timestamp"].as_str().unwrap()).is_ok(),
            "{line}"
        );
        assert_eq!(line["level"], "INFO");
        assert_eq!(line["target"], "gatehouse::call");
        assert_eq!(line["message"], "tool call");
        assert_eq!(line["aws_request_id"], "aws-req-1");
        let names: Vec<&str> = line["fields"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(names, CALL_FIELDS, "in this order, arguments dropped");
        assert_eq!(
            line["fields"],
            json!({
                "request_id": "7",
                "tenant": "acme",
                "connection": "con_1",
                "tool": "get_server_status",
                "effect": "read",
                "outcome": "ok",
                "duration_ms": 12.5
            })
        );
        assert!(!line.to_string().contains("do not log"));
    }

    #[test]
    fn a_call_event_is_also_an_emf_metric() {
        let (_, metrics) = capture("info", call_event);
        assert_eq!(metrics.len(), 1, "{metrics:?}");
        let emf = &metrics[0];
        assert!(emf["_aws"]["Timestamp"].as_i64().unwrap() > 1_600_000_000_000);
        assert_eq!(
            emf["_aws"]["CloudWatchMetrics"],
            json!([{
                "Namespace": "gatehouse",
                "Dimensions": [["tool", "outcome"]],
                "Metrics": [
                    {"Name": "calls", "Unit": "Count"},
                    {"Name": "duration_ms", "Unit": "Milliseconds"}
                ]
            }])
        );
        assert_eq!(emf["tool"], "get_server_status");
        assert_eq!(emf["outcome"], "ok");
        assert_eq!(emf["calls"], 1);
        assert_eq!(emf["duration_ms"], 12.5);
        // Every dimension and metric the directive names is a member of the object.
        for name in ["tool", "outcome", "calls", "duration_ms"] {
            assert!(emf.get(name).is_some(), "{name} missing: {emf}");
        }
        assert!(!emf.to_string().contains("do not log"));
    }

    #[test]
    fn metrics_do_not_depend_on_the_log_level() {
        let (logs, metrics) = capture("warn", || {
            call_event();
            tracing::info!(target: "gatehouse::other", "not a call");
        });
        assert!(logs.is_empty(), "{logs:?}");
        assert_eq!(metrics.len(), 1);
    }

    #[test]
    fn other_events_keep_their_fields_and_are_not_metrics() {
        let (logs, metrics) = capture("info", || {
            let span = tracing::info_span!("Lambda runtime invoke", requestId = "aws-req-2");
            let _entered = span.enter();
            let cause = std::io::Error::other("disk \"full\"\nsecond line");
            tracing::warn!(
                target: "identity::authenticator",
                count = 3_u64,
                ok = false,
                error = &cause as &(dyn std::error::Error + 'static),
                "kill switch is on: agent call refused with {}",
                503
            );
        });
        assert!(metrics.is_empty(), "{metrics:?}");
        let line = &logs[0];
        assert_eq!(line["level"], "WARN");
        assert_eq!(line["target"], "identity::authenticator");
        assert_eq!(
            line["message"],
            "kill switch is on: agent call refused with 503"
        );
        assert_eq!(line["aws_request_id"], "aws-req-2", "even below info");
        assert_eq!(
            line["fields"],
            json!({"count": 3, "ok": false, "error": "disk \"full\"\nsecond line"})
        );
    }

    #[test]
    fn the_log_filter_applies_to_events() {
        let (logs, _) = capture("warn,store_dynamodb=debug", || {
            tracing::info!(target: "mcp_lambda", "hidden");
            tracing::debug!(target: "store_dynamodb", "shown");
            tracing::error!(target: "mcp_lambda", "shown too");
        });
        let messages: Vec<&str> = logs
            .iter()
            .map(|l| l["message"].as_str().unwrap())
            .collect();
        assert_eq!(messages, ["shown", "shown too"]);
    }

    #[test]
    fn outside_an_invocation_there_is_no_request_id() {
        let (logs, _) = capture("info", || tracing::info!("cold start"));
        assert!(logs[0].get("aws_request_id").is_none(), "{}", logs[0]);
        assert_eq!(logs[0]["fields"], json!({}));
    }
}
