//! The store failing at each step of a call, through the real handler on SQLite and on the
//! local DynamoDB server (wrapped in `support::faults::FaultyStore`): what the caller sees, and
//! what the store holds afterwards.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_pipeline::Toolset;
use mcp_test_client::ToolCall;
use serde_json::{Value, json};

use crate::support::deletion::PreparedDeletion;
use crate::support::faults::{Call, Fault, FaultyStore, Gate, Op};
use crate::support::on_every_backend;
use crate::support::store::{Backend, fresh};
use crate::world::World;

/// The longest wait for one store call here: the default, short enough that a stalled store
/// is seen soon, and above what a healthy local store takes even on a loaded CI machine (one
/// call to the local DynamoDB server once took more than 1.5 s there).
const STORE_WAIT: Duration = app::STORE_WAIT;
/// A stall: far longer than the wait.
const STALL: Duration = Duration::from_secs(30);

/// A world on a fresh store behind a fault-injecting wrapper.
struct Faulty {
    world: World,
    store: Arc<FaultyStore>,
    connection: String,
    token: String,
}

/// A world whose store waits are long: a fault is what a test here looks at, not the local
/// DynamoDB server being slow on a loaded machine (which, under the deployed bound, turns a
/// set-up call into an outage). A call held at a gate is no outage either.
async fn faulty(backend: Backend) -> Option<Faulty> {
    faulty_with(backend, mcp_pipeline::Limits::default(), PATIENT).await
}

/// [`faulty`] under the deployed bound on store waits, for the test of that bound.
async fn bounded(backend: Backend) -> Option<Faulty> {
    faulty_with(backend, mcp_pipeline::Limits::default(), STORE_WAIT).await
}

/// [`faulty`] with its limits raised 1,000 times, for tests of what runs once that a rate
/// limit would otherwise answer first.
async fn faulty_unlimited(backend: Backend) -> Option<Faulty> {
    let limits = app::bench::scaled_limits(mcp_pipeline::Limits::default(), 1_000);
    faulty_with(backend, limits, PATIENT).await
}

/// A store wait no test here reaches (a stall is 30 s).
const PATIENT: Duration = Duration::from_secs(60);

async fn faulty_with(
    backend: Backend,
    limits: mcp_pipeline::Limits,
    store_wait: Duration,
) -> Option<Faulty> {
    let (inner, dir) = fresh(backend).await?;
    let store = FaultyStore::new(inner);
    let settings = app::Settings {
        backend: backend.name().into(),
        store_wait,
        limits,
        ..app::Settings::default()
    };
    // The member and the connection are set up before any fault, with no bound on the store's
    // waits: the setup is not what these tests look at.
    let unbounded = app::Settings {
        store_wait: PATIENT,
        ..settings.clone()
    };
    let setup = World::on_store(backend, store.clone(), None, &unbounded);
    setup.member("acme", "ana", "owner").await;
    let (connection, token) = setup.connect("acme", "ana", Toolset::Full).await;
    let world = World::on_store(backend, store.clone(), dir, &settings);
    Some(Faulty {
        world,
        store,
        connection,
        token,
    })
}

/// How many live items partition `pk` holds (read past the faults).
async fn count(f: &Faulty, pk: &str) -> usize {
    let page = f
        .store
        .inner()
        .query(store::Query::partition(pk))
        .await
        .unwrap();
    page.items.len()
}

/// Customers, audit rows of executed writes, and replay records of `acme`.
async fn holdings(f: &Faulty) -> (usize, usize, usize) {
    (
        count(f, "acme#customer").await,
        audited(f, "create_customer").await,
        count(f, &format!("acme#replay#{}", f.connection)).await,
    )
}

fn grace() -> Value {
    json!({"name": "Grace Hopper", "email": "grace@example.com"})
}

/// What a `tools/call` was answered with.
#[derive(Debug)]
struct Answer {
    status: u16,
    /// The JSON-RPC body.
    body: Value,
    /// The `Retry-After` header, if any.
    retry_after: Option<String>,
}

/// A `tools/call` with `params`.
async fn call(f: &Faulty, params: Value) -> Answer {
    let answer = f.world.client(&f.token).request("tools/call", params).await;
    let retry_after = answer.header("retry-after").map(str::to_owned);
    Answer {
        status: answer.status,
        body: answer.json(),
        retry_after,
    }
}

/// `create_customer` for Grace.
async fn create(f: &Faulty) -> Answer {
    call(f, json!({"name": "create_customer", "arguments": grace()})).await
}

/// Grace created and her deletion prepared: the `confirm_action` call that executes it.
async fn prepared_deletion(f: &Faulty) -> Value {
    let client = f.world.client(&f.token);
    let prepared = crate::support::deletion::prepare(&client, "grace@example.com").await;
    json!({"name": "confirm_action", "arguments": prepared.confirm_arguments})
}

/// The confirmation's transaction: it marks the pending action used.
fn consumption(c: &Call) -> bool {
    c.op == Op::Transact && c.touches("pending")
}

/// Executed `action`s of `acme` in its audit trail.
async fn audited(f: &Faulty, action: &str) -> usize {
    identity::audit::recent(
        f.store.inner().as_ref(),
        &store::TenantId::new("acme"),
        None,
        100,
    )
    .await
    .unwrap()
    .iter()
    .filter(|e| e.action == action && e.outcome == "ok")
    .count()
}

/// The tool result's error code, when the call ended in a tool error.
fn error_code(body: &Value) -> Option<&str> {
    let result = &body["result"];
    (result["isError"] == json!(true)).then(|| result["structuredContent"]["code"].as_str())?
}

/// Which calls a fault meets.
type Picks = fn(&Call) -> bool;

fn commit_of_customer(c: &Call) -> bool {
    c.op == Op::Transact && c.touches("customer")
}

/// The store down while the credential is read: 503 with `Retry-After`, and nothing written.
async fn store_down_at_authentication(f: Faulty) {
    let before = holdings(&f).await;
    f.store.on(
        |c| c.touches("mcptoken") || c.touches("connection"),
        Fault::Fail,
        usize::MAX,
    );
    let Answer {
        status,
        body,
        retry_after,
    } = create(&f).await;
    assert_eq!(status, 503, "{body}");
    assert!(retry_after.is_some(), "503 without Retry-After: {body}");
    assert!(f.store.faults_met() > 0, "the fault was never reached");
    // Reads fail closed the same way: the switches and rights cannot be read either.
    for (method, params) in [
        ("tools/list", json!({})),
        (
            "tools/call",
            json!({"name": "get_server_status", "arguments": {}}),
        ),
    ] {
        let read = f.world.client(&f.token).request(method, params).await;
        assert_eq!(read.status, 503, "{method}");
        assert!(read.header("retry-after").is_some(), "{method}");
    }
    f.store.heal();
    assert_eq!(holdings(&f).await, before);
}
on_every_backend!(
    at_authentication,
    store_down_at_authentication,
    |backend| faulty(backend),
    threads = 2
);

/// What a caller must get when the store fails under it: HTTP 503 with `Retry-After` where the
/// endpoint cannot serve at all (the credential unread), otherwise a tool error marked
/// `retryable` (`unavailable`, or a transaction that met a concurrent one) with
/// `retry_after_seconds`.
fn assert_retryable(answer: &Answer) {
    let Answer {
        status,
        body,
        retry_after,
    } = answer;
    if *status == 503 {
        assert!(retry_after.is_some(), "503 without Retry-After: {body}");
        return;
    }
    assert_eq!(*status, 200, "{body}");
    let s = &body["result"]["structuredContent"];
    // A store outage, or a transaction that met a concurrent one: marked retryable alike.
    assert_eq!(s["retryable"], json!(true), "{body}");
    assert!(s["retry_after_seconds"].is_number(), "{body}");
}

/// `fault` on the calls `picks` chooses, once: a retryable answer and nothing written; healed,
/// the same call runs once.
async fn fails_once_then_runs_once(
    f: &Faulty,
    picks: impl Fn(&Call) -> bool + Send + Sync + 'static,
    fault: Fault,
) {
    f.store.on(picks, fault, 1);
    assert_retryable(&create(f).await);
    assert_eq!(f.store.faults_met(), 1, "the fault was never reached");
    assert_eq!(holdings(f).await, (0, 0, 0), "nothing half-written");
    let body = create(f).await.body;
    assert_eq!(error_code(&body), None, "{body}");
    assert_eq!(
        holdings(f).await,
        (1, 1, 1),
        "one customer, its audit row, one replay record"
    );
}

async fn commit_fails(f: Faulty) {
    fails_once_then_runs_once(&f, commit_of_customer, Fault::Fail).await;
}
on_every_backend!(
    at_commit,
    commit_fails,
    |backend| faulty(backend),
    threads = 2
);

async fn commit_throttled(f: Faulty) {
    fails_once_then_runs_once(&f, commit_of_customer, Fault::Throttle).await;
}
on_every_backend!(
    commit_throttled_,
    commit_throttled,
    |backend| faulty(backend),
    threads = 2
);

/// The audit row is written in the write's own transaction: when it cannot be written, neither
/// is the customer.
async fn audit_row_fails(f: Faulty) {
    let audit_put = |c: &Call| c.op == Op::Transact && c.touches("audit");
    fails_once_then_runs_once(&f, audit_put, Fault::Fail).await;
}
on_every_backend!(
    at_audit_row,
    audit_row_fails,
    |backend| faulty(backend),
    threads = 2
);

async fn replay_lookup_fails(f: Faulty) {
    let replay_read = |c: &Call| matches!(c.op, Op::Get | Op::BatchGet) && c.touches("replay");
    fails_once_then_runs_once(&f, replay_read, Fault::Fail).await;
}
on_every_backend!(
    at_replay_lookup,
    replay_lookup_fails,
    |backend| faulty(backend),
    threads = 2
);

/// The admission's transaction: the rate buckets and a slot.
fn admission(c: &Call) -> bool {
    matches!(c.op, Op::Transact | Op::Update) && (c.touches("rate") || c.touches("slot"))
}

async fn admission_fails(f: Faulty) {
    fails_once_then_runs_once(&f, admission, Fault::Fail).await;
}
on_every_backend!(
    at_admission,
    admission_fails,
    |backend| faulty(backend),
    threads = 2
);

/// A write its client abandons after the release beside its commit has answered, with the
/// commit still on its way: the slot is given back once, not a second time on the drop (a
/// second conditional delete would fail, and under load cancel a whole batch of releases).
async fn abandoned_after_its_release(f: Faulty) {
    let releases = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = Arc::clone(&releases);
    f.store.watch(move |c| {
        if c.op == Op::Delete && c.touches_only("slot") {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let answers = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = Arc::clone(&answers);
    f.store.watch_answers(move |c| {
        if c.op == Op::Delete && c.touches_only("slot") {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let released = || releases.load(std::sync::atomic::Ordering::SeqCst);
    let answered = || answers.load(std::sync::atomic::Ordering::SeqCst);
    f.store.on(commit_of_customer, Fault::Delay(STALL), 1);
    let released_with_commit_pending = async {
        while f.store.faults_met() < 1 || answered() < 1 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // The answer has left the store's wrapper; let it reach the call.
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    tokio::select! {
        answer = create(&f) => panic!("the call ended: {answer:?}"),
        () = released_with_commit_pending => {}
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(released(), 1, "the slot was given back twice");
    assert_eq!(count(&f, &format!("acme#slot#{}", f.connection)).await, 0);
}
on_every_backend!(
    abandoned_after_release,
    abandoned_after_its_release,
    |backend| faulty(backend),
    threads = 2
);

/// The waits a call asked the timer for when its admission's outcome was unknown (the store
/// unreachable), on a deployment whose answer waits for deferred work or not.
async fn waits_after_an_unknown_admission(answer_waits_for_deferred: bool) -> Vec<Duration> {
    let (inner, dir) = fresh(Backend::Sqlite)
        .await
        .expect("SQLite is always there");
    let store = FaultyStore::new(inner);
    let asked: Arc<std::sync::Mutex<Vec<Duration>>> = Arc::default();
    let log = Arc::clone(&asked);
    let sleep = mcp_pipeline::Sleep(Arc::new(move |d| {
        log.lock().unwrap().push(d);
        Box::pin(tokio::time::sleep(d))
    }));
    let settings = app::Settings {
        backend: "sqlite".into(),
        sleep: Some(sleep),
        answer_waits_for_deferred,
        ..app::Settings::default()
    };
    let setup = World::on_store(Backend::Sqlite, store.clone(), None, &settings);
    setup.member("acme", "ana", "owner").await;
    let (_, token) = setup.connect("acme", "ana", Toolset::Full).await;
    let world = World::on_store(Backend::Sqlite, store.clone(), dir, &settings);
    store.on(admission, Fault::Fail, 1);
    let params = json!({"name": "create_customer", "arguments": grace()});
    let answer = world.client(&token).request("tools/call", params).await;
    assert_eq!(error_code(&answer.json()), Some("unavailable"));
    asked.lock().unwrap().clone()
}

/// Where the answer waits for deferred work (Lambda, ADR 25), an admission whose outcome is
/// unknown gives its possible slots back once, at once: the second pass, ten seconds later
/// (`ADMISSION_IN_FLIGHT`), would hold the answer that long, and the slot's lease covers it.
/// Elsewhere the second pass is still scheduled.
#[tokio::test]
async fn where_the_answer_waits_no_late_give_back_holds_it() {
    let late = Duration::from_secs(10);
    assert!(!waits_after_an_unknown_admission(true).await.contains(&late));
    assert!(
        waits_after_an_unknown_admission(false)
            .await
            .contains(&late)
    );
}

/// A read tool's own read fails: a retryable answer; healed, the same call reads.
async fn body_read_fails(f: Faulty) {
    let client = f.world.client(&f.token);
    let created = client.call_tool("create_customer", grace()).await;
    let customer = created.structured()["customer"]["customer"].clone();
    let read =
        |c: &Call| matches!(c.op, Op::Get | Op::BatchGet | Op::Query) && c.touches("customer");
    f.store.on(read, Fault::Fail, 1);
    let get = json!({"name": "get_customer", "arguments": {"customer": customer}});
    assert_retryable(&call(&f, get.clone()).await);
    assert_eq!(f.store.faults_met(), 1, "the fault was never reached");
    let read = client.request("tools/call", get).await.json();
    assert_eq!(error_code(&read), None, "{read}");
    assert_eq!(
        read["result"]["structuredContent"]["customer"]["customer"],
        customer
    );
}
on_every_backend!(
    at_body_read,
    body_read_fails,
    |backend| faulty(backend),
    threads = 2
);

/// The commit lands but its answer is lost: the caller is told to retry, and the retry is
/// answered by the replay record, so the customer exists once.
async fn commit_answer_lost(f: Faulty) {
    f.store.on(commit_of_customer, Fault::LoseAnswer, 1);
    let body = create(&f).await.body;
    assert_eq!(error_code(&body), Some("unavailable"), "{body}");
    assert_eq!(holdings(&f).await, (1, 1, 1), "the commit landed");
    let retried = create(&f).await.body;
    assert_eq!(error_code(&retried), None, "{retried}");
    assert_eq!(
        retried["result"]["structuredContent"]["replayed"],
        json!(true),
        "answered by the replay record: {retried}"
    );
    assert_eq!(holdings(&f).await, (1, 1, 1), "still one customer");
}
on_every_backend!(
    after_commit,
    commit_answer_lost,
    |backend| faulty(backend),
    threads = 2
);

/// The confirmation's consumption (the transaction that deletes the pending action and runs
/// the prepared write) fails: the customer stays, the pending action stays usable, and the
/// retried confirmation runs the deletion once.
async fn consumption_fails(f: Faulty) {
    let confirm = prepared_deletion(&f).await;
    f.store.on(consumption, Fault::Fail, 1);
    assert_retryable(&call(&f, confirm.clone()).await);
    assert_eq!(f.store.faults_met(), 1);
    assert_eq!(count(&f, "acme#customer").await, 1, "the customer stays");
    let pending = count(&f, "acme#pending").await;
    assert_eq!(pending, 1, "the pending action stays");
    let retried = call(&f, confirm).await.body;
    assert_eq!(error_code(&retried), None, "{retried}");
    let live = f
        .store
        .inner()
        .query(store::Query::partition("acme#customer"))
        .await
        .unwrap();
    let active = live
        .items
        .iter()
        .filter(|(_, i)| i.get("state").and_then(store::Value::as_s) == Some("active"))
        .count();
    assert_eq!(active, 0, "the customer is deleted");
    assert_eq!(
        audited(&f, "delete_customer").await,
        1,
        "one deletion, audited once"
    );
}
on_every_backend!(
    at_consumption,
    consumption_fails,
    |backend| faulty(backend),
    threads = 2
);

/// A stalled store at each step: the call still ends, long before the stall would, with the
/// answer an outage gets (503 at authentication, a retryable tool error after it); nothing is
/// half-written and the same call then runs once.
async fn stalls_end(f: Faulty) {
    let steps: [(&str, Picks); 3] = [
        ("authentication", |c| {
            c.touches("mcptoken") || c.touches("connection")
        }),
        ("admission", |c| {
            matches!(c.op, Op::Transact | Op::Update) && (c.touches("rate") || c.touches("slot"))
        }),
        ("commit", commit_of_customer),
    ];
    for (step, picks) in steps {
        f.store.on(picks, Fault::Delay(STALL), 1);
        let started = Instant::now();
        let answer = create(&f).await;
        let took = started.elapsed();
        assert!(took < STALL / 3, "{step}: the call waited {took:?}");
        assert_retryable(&answer);
        assert_eq!(
            holdings(&f).await,
            (0, 0, 0),
            "{step}: nothing half-written"
        );
        f.store.heal();
    }
    let body = create(&f).await.body;
    assert_eq!(error_code(&body), None, "{body}");
    assert_eq!(holdings(&f).await, (1, 1, 1));
}
on_every_backend!(
    stalled_store,
    stalls_end,
    |backend| bounded(backend),
    threads = 2
);

/// The JSON API answers a write the store can never take (an item too large) with 422, not
/// the 503 of an outage, which invites the same request again; an outage stays 503; neither
/// writes anything.
async fn api_commit_refused_or_failed(f: Faulty) {
    let token = crate::support::api_token(&f.world.app, "acme", "ana").await;
    let auth = format!("Bearer {}", token.unwrap());
    let headers = [
        ("content-type", "application/json"),
        ("authorization", auth.as_str()),
    ];
    let body = grace().to_string();
    for (fault, status) in [(Fault::TooLarge, 422), (Fault::Fail, 503)] {
        f.store.on(commit_of_customer, fault.clone(), 1);
        let r = crate::web::send(&f.world, "POST", "/api/customers", &headers, &body).await;
        assert_eq!(r.status, status, "{fault:?}: {}", r.body);
        assert_eq!(
            count(&f, "acme#customer").await,
            0,
            "{fault:?}: nothing written"
        );
    }
}
on_every_backend!(
    api_commit,
    api_commit_refused_or_failed,
    |backend| faulty(backend),
    threads = 2
);

/// A write its client abandons while its commit and the slot's release beside it are on their
/// way (ADR 26: a slot outlives neither its call): the slot is given back at once, not after
/// its lease, and the connection's next write is served and runs once.
async fn abandoned_mid_commit(f: Faulty) {
    let slots = format!("acme#slot#{}", f.connection);
    f.store.on(commit_of_customer, Fault::Delay(STALL), 1);
    let release = |c: &Call| c.op == Op::Delete && c.touches_only("slot");
    f.store.on(release, Fault::Delay(STALL), 1);
    let both_on_their_way = async {
        while f.store.faults_met() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::select! {
        answer = create(&f) => panic!("the call ended: {answer:?}"),
        () = both_on_their_way => {}
    }
    // Well inside the slot's lease (25 s), which would free it anyway.
    let deadline = Instant::now() + Duration::from_secs(10);
    while count(&f, &slots).await > 0 {
        assert!(
            Instant::now() < deadline,
            "the abandoned write's slot is still taken"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let body = create(&f).await.body;
    assert_eq!(error_code(&body), None, "{body}");
    assert_eq!(holdings(&f).await, (1, 1, 1));
}
on_every_backend!(
    abandoned_commit,
    abandoned_mid_commit,
    |backend| faulty(backend),
    threads = 2
);

/// A concurrent transaction on the same items cancels the commit: a retryable answer, nothing
/// written, and the retry runs once.
async fn commit_conflicts(f: Faulty) {
    fails_once_then_runs_once(&f, commit_of_customer, Fault::Conflict).await;
}
on_every_backend!(
    commit_conflict,
    commit_conflicts,
    |backend| faulty(backend),
    threads = 2
);

/// The commit landed, its answer was lost, and the same transaction was sent again (as an SDK
/// retries): the second attempt fails on the first one's items. That failure is recognised as
/// this call's own write: the caller gets its result (first or replayed), never an error and
/// never a second customer.
async fn commit_retried_after_it_landed(f: Faulty) {
    f.store.on(commit_of_customer, Fault::DoneThenRetried, 1);
    let Answer { status, body, .. } = create(&f).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(error_code(&body), None, "{body}");
    assert_eq!(f.store.faults_met(), 1, "the fault was never reached");
    assert_eq!(holdings(&f).await, (1, 1, 1));
    let again = create(&f).await.body;
    assert_eq!(
        again["result"]["structuredContent"]["replayed"],
        json!(true),
        "{again}"
    );
    assert_eq!(holdings(&f).await, (1, 1, 1));
}
on_every_backend!(
    commit_sent_twice,
    commit_retried_after_it_landed,
    |backend| faulty(backend),
    threads = 2
);

/// The confirmation's transaction lands but its answer is lost: the caller is told to retry,
/// and the retried confirmation says the action was already confirmed and executed (status
/// `used`), never runs it a second time.
async fn consumption_answer_lost(f: Faulty) {
    let confirm = prepared_deletion(&f).await;
    f.store.on(consumption, Fault::LoseAnswer, 1);
    assert_retryable(&call(&f, confirm.clone()).await);
    let retried = call(&f, confirm).await.body;
    assert_eq!(
        retried["result"]["structuredContent"]["status"], "used",
        "{retried}"
    );
    assert_eq!(audited(&f, "delete_customer").await, 1, "deleted once");
}
on_every_backend!(
    after_consumption,
    consumption_answer_lost,
    |backend| faulty(backend),
    threads = 2
);

/// The store refuses the commit as too large (every argument has a maximum length, so no
/// gatehouse tool reaches the 400 KB item limit, but a store can still say so): the caller is
/// told the change cannot be stored as it is, not to retry, and nothing is written.
async fn commit_too_large(f: Faulty) {
    f.store.on(commit_of_customer, Fault::TooLarge, 1);
    let Answer { status, body, .. } = create(&f).await;
    assert_eq!(status, 200, "{body}");
    let s = &body["result"]["structuredContent"];
    assert_eq!(s["code"], "rejected", "{body}");
    assert_eq!(s["retryable"], false, "{body}");
    assert!(s.get("retry_after_seconds").is_none(), "{body}");
    assert_eq!(holdings(&f).await, (0, 0, 0));
}
on_every_backend!(
    commit_refused_too_large,
    commit_too_large,
    |backend| faulty(backend),
    threads = 2
);

/// The bound costs nothing where the store answers at once: a call answered on its first poll
/// starts no timer, and one that waits gets its timer and is cut short at the bound.
#[tokio::test]
async fn the_bound_starts_a_timer_only_for_calls_that_wait() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use store::Store as _;
    let store = FaultyStore::new(Arc::new(store::MemoryStore::new()));
    let timers = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&timers);
    let timer: store::Timer = Arc::new(move |d| {
        counted.fetch_add(1, Ordering::SeqCst);
        Box::pin(tokio::time::sleep(d))
    });
    let bounded = store::BoundedStore::new(store.clone(), Duration::from_millis(200), timer);
    let key = store::Key::new("acme#customers", "cus_1");
    assert_eq!(bounded.get(&key).await.unwrap(), None);
    assert_eq!(
        timers.load(Ordering::SeqCst),
        0,
        "an answer at once needs no timer"
    );

    store.on(|c| c.op == Op::Get, Fault::Delay(STALL), 1);
    let started = Instant::now();
    let answer = bounded.get(&key).await;
    assert!(
        matches!(answer, Err(store::StoreError::Unavailable(_))),
        "{answer:?}"
    );
    assert!(
        started.elapsed() < STALL / 3,
        "waited {:?}",
        started.elapsed()
    );
    assert_eq!(timers.load(Ordering::SeqCst), 1, "a waiting call is timed");
}

/// Making a workspace while the store fails reports a store failure (which the caller may
/// retry), not bad input; bad input and a taken id stay the caller's, and a failed attempt
/// leaves nothing behind.
#[tokio::test]
async fn a_workspace_made_while_the_store_fails_is_a_store_failure() {
    let store = FaultyStore::new(Arc::new(store::MemoryStore::new()));
    let shared: Arc<dyn store::Store> = store.clone();
    use crate::support::workspaces::{console, named, prices};
    let console = console("acme");
    let outside = outside::ClockAndRandomness::system();
    let acme = |zone: &str| named("acme", zone);
    let ops = || vec![prices("acme", "EUR", "19")];
    store.on(|c| c.op == Op::Transact, Fault::Fail, 1);
    let failed =
        accounts::workspaces::create(&shared, &outside, &console, &acme("Europe/Berlin"), ops())
            .await;
    assert!(
        matches!(failed, Err(accounts::AccountsError::Store(_))),
        "{failed:?}"
    );
    assert!(
        accounts::workspaces::list(&shared)
            .await
            .unwrap()
            .is_empty()
    );
    let bad = accounts::workspaces::create(&shared, &outside, &console, &acme("CEST"), ops()).await;
    assert!(
        matches!(bad, Err(accounts::AccountsError::Invalid(_))),
        "{bad:?}"
    );
    accounts::workspaces::create(&shared, &outside, &console, &acme("Europe/Berlin"), ops())
        .await
        .unwrap();
    let again =
        accounts::workspaces::create(&shared, &outside, &console, &acme("Europe/Berlin"), ops())
            .await;
    assert!(
        matches!(again, Err(accounts::AccountsError::Invalid(_))),
        "{again:?}"
    );
}

/// Waits until the held call has reached the store's door.
async fn until_held(f: &Faulty) {
    let started = Instant::now();
    while f.store.faults_met() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the call was never held"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Runs `held` and `meanwhile` at once: the next store call `pick` chooses (one of `held`'s)
/// waits at the store's door until `meanwhile`, started once it waits there, has answered.
/// Both answers. The order is made, not hoped for: no machine's speed changes it.
async fn held_during<A, B>(
    f: &Faulty,
    pick: impl Fn(&Call) -> bool + Send + Sync + 'static,
    held: impl std::future::Future<Output = A>,
    meanwhile: impl std::future::Future<Output = B>,
) -> (A, B) {
    let gate = Gate::new();
    f.store.on(pick, Fault::HoldUntil(gate.clone()), 1);
    let meanwhile = async {
        until_held(f).await;
        let answer = meanwhile.await;
        gate.open();
        answer
    };
    tokio::join!(held, meanwhile)
}

/// `tool` called with `args` on a connection of its own: the JSON-RPC answer.
async fn call_on_its_own(f: &Faulty, tool: &str, args: Value) -> Value {
    let (_, token) = f.world.connect("acme", "ana", Toolset::Full).await;
    let params = json!({"name": tool, "arguments": args});
    f.world
        .client(&token)
        .request("tools/call", params)
        .await
        .json()
}

/// A booking of Grace by Tom, made on a connection of its own.
async fn book_grace(f: &Faulty, customer: &str, technician: &str) -> Value {
    let args = crate::booking_tools::draft(customer, technician, "2055-06-07 09:00");
    call_on_its_own(f, "create_booking", args).await
}

/// Grace created with her deletion prepared, and Tom: where the deletion races start.
async fn grace_to_delete_and_tom(f: &Faulty) -> (PreparedDeletion, String) {
    let client = f.world.client(&f.token);
    let prepared = crate::support::deletion::prepare(&client, "grace@example.com").await;
    let tom =
        crate::booking_tools::seeded_technician(&f.world, "acme", "Tom", "Europe/Berlin").await;
    (prepared, tom)
}

/// Holds Grace's approved deletion at the store's door while `meanwhile` runs; both answers.
async fn deletion_held_during<T>(
    f: &Faulty,
    prepared: &PreparedDeletion,
    meanwhile: impl std::future::Future<Output = T>,
) -> (ToolCall, T) {
    let client = f.world.client(&f.token);
    let deletion = client.call_tool("confirm_action", prepared.confirm_arguments.clone());
    held_during(f, consumption, deletion, meanwhile).await
}

/// After a held deletion that a booking stopped: nothing was deleted, Grace and her booking stay.
async fn grace_and_her_booking_stay(f: &Faulty, deleted: &ToolCall, booked: &Value) {
    assert_eq!(booked["result"]["isError"], json!(false), "{booked}");
    assert!(deleted.is_error(), "{}", deleted.text());
    assert!(
        deleted.text().contains("while the deletion ran"),
        "{}",
        deleted.text()
    );
    assert_eq!(count(f, "acme#customer").await, 1, "Grace stays");
    let bookings = crate::support::store::bookings_held(f.store.inner().as_ref(), "acme").await;
    assert_eq!(bookings, 1, "with her booking");
    assert_eq!(audited(f, "delete_customer").await, 0);
}

/// ADR 41: a booking made while a customer's approved deletion is on its way to the store
/// stops the deletion, and a deletion that lands while a booking is on its way stops the
/// booking: no booking is ever left without its customer.
async fn a_booking_made_during_a_deletion_stops_it(f: Faulty) {
    let (prepared, tom) = grace_to_delete_and_tom(&f).await;
    let booking = book_grace(&f, &prepared.customer, &tom);
    let (deleted, booked) = deletion_held_during(&f, &prepared, booking).await;
    grace_and_her_booking_stay(&f, &deleted, &booked).await;
}
on_every_backend!(
    booking_during_deletion,
    a_booking_made_during_a_deletion_stops_it,
    |backend| faulty(backend),
    threads = 2
);

/// An edit of the customer that changes nothing they see (an empty patch keeps the version)
/// landing after the booking keeps the booking's mark: the held deletion still fails.
async fn an_edit_after_the_booking_keeps_its_mark(f: Faulty) {
    let (prepared, tom) = grace_to_delete_and_tom(&f).await;
    let booking_then_edit = async {
        let booked = book_grace(&f, &prepared.customer, &tom).await;
        let grace = json!({"customer": prepared.customer});
        let read = call_on_its_own(&f, "get_customer", grace).await;
        let version = read["result"]["structuredContent"]["customer"]["version"].clone();
        let edit = json!({"customer": prepared.customer, "version": version});
        (booked, call_on_its_own(&f, "update_customer", edit).await)
    };
    let (deleted, (booked, edited)) = deletion_held_during(&f, &prepared, booking_then_edit).await;
    assert_eq!(edited["result"]["isError"], json!(false), "{edited}");
    grace_and_her_booking_stay(&f, &deleted, &booked).await;
}
on_every_backend!(
    edit_during_deletion,
    an_edit_after_the_booking_keeps_its_mark,
    |backend| faulty(backend),
    threads = 2
);

async fn a_deletion_landing_during_a_booking_stops_it(f: Faulty) {
    let (prepared, tom) = grace_to_delete_and_tom(&f).await;
    let booking = book_grace(&f, &prepared.customer, &tom);
    deletion_lands_during(&f, "booking", booking, &prepared).await;
}
on_every_backend!(
    deletion_during_booking,
    a_deletion_landing_during_a_booking_stops_it,
    |backend| faulty(backend),
    threads = 2
);

/// Holds the first commit that writes `kind` while Grace's prepared deletion lands, then finds
/// that `creation` (which makes a `kind` naming Grace) failed as "no such customer" and left no
/// `kind` behind.
async fn deletion_lands_during(
    f: &Faulty,
    kind: &'static str,
    creation: impl std::future::Future<Output = Value>,
    prepared: &PreparedDeletion,
) {
    let client = f.world.client(&f.token);
    let deletion = client.call_tool("confirm_action", prepared.confirm_arguments.clone());
    let writing = move |c: &Call| c.op == Op::Transact && c.touches(kind);
    let (created, deleted) = held_during(f, writing, creation, deletion).await;
    assert!(!deleted.is_error(), "{}", deleted.text());
    assert_eq!(error_code(&created), Some("not_found"), "{created}");
    assert_eq!(count(f, "acme#customer").await, 0, "Grace is gone");
    assert_eq!(
        count(f, &format!("acme#{kind}")).await,
        0,
        "and no {kind} names her"
    );
}

/// The same for a quote: one made for a customer whose deletion lands first is not written.
async fn a_deletion_landing_during_a_quote_stops_it(f: Faulty) {
    crate::booking_tools::tenant_settings(&f.world, "acme", "EUR", "19").await;
    let client = f.world.client(&f.token);
    let prepared = crate::support::deletion::prepare(&client, "grace@example.com").await;
    let lines = json!([{"description": "Filter", "quantity": "3", "unit_price": "19.99"}]);
    let args = json!({"customer": prepared.customer, "lines": lines});
    let quoting = call_on_its_own(&f, "create_quote", args);
    deletion_lands_during(&f, "quote", quoting, &prepared).await;
}
on_every_backend!(
    deletion_during_quote,
    a_deletion_landing_during_a_quote_stops_it,
    |backend| faulty(backend),
    threads = 2
);

/// The same page prepared while its first confirmation is still committing (the commit held
/// back, as a slow disk or another process writing the data file holds it): the second preview
/// was stored before the page ran, so confirming it does not page again (ADR 44; the clock
/// comparison of ADR 42 counted it as prepared after, and paged twice).
async fn a_preview_made_while_the_action_commits_does_not_run_again(f: Faulty) {
    let tom = crate::booking_tools::seeded_technician(&f.world, "acme", "Tom Weber", "UTC").await;
    let c = f.world.client(&f.token);
    let page = json!({"technician": tom, "message": "Burst pipe, please call"});
    let first = c.call_tool("page_technician", page.clone()).await;
    let run = |call: &Call| call.op == Op::Transact && call.touches("executed");
    let running = crate::booking_tools::confirm(&c, &first);
    let prepared_meanwhile = c.call_tool("page_technician", page.clone());
    let (ran, second) = held_during(&f, run, running, prepared_meanwhile).await;
    assert_eq!(ran.structured()["status"], "DONE", "{}", ran.text());
    assert_eq!(
        second.structured()["status"],
        "PREVIEW",
        "{}",
        second.text()
    );
    let again = crate::booking_tools::confirm(&c, &second).await;
    assert_eq!(
        again.structured()["status"],
        "executed_already",
        "{}",
        again.text()
    );
    assert_eq!(
        crate::booking_tools::sent(&f.world, "acme", "Page").await,
        1
    );
}
on_every_backend!(
    preview_during_run,
    a_preview_made_while_the_action_commits_does_not_run_again,
    |backend| faulty_unlimited(backend),
    threads = 2
);

/// The same confirmation sent twice, the second while the first is on its way to the store
/// (held there until the second has answered): the second deletes, and the first is told the
/// action was decided already, not that the customer changed (which sends a model to read it
/// again and delete a second time).
async fn a_confirmation_sent_twice_at_once_is_answered_as_decided(f: Faulty) {
    let c = f.world.client(&f.token);
    let prepared = crate::support::deletion::prepare(&c, "grace@example.com").await;
    let deleting = |call: &Call| call.op == Op::Transact && call.touches("customer");
    let confirm = || c.call_tool("confirm_action", prepared.confirm_arguments.clone());
    let (held, meanwhile) = held_during(&f, deleting, confirm(), confirm()).await;
    assert!(!meanwhile.is_error(), "{}", meanwhile.text());
    told_decided(held.structured());
    assert_eq!(count(&f, "acme#customer").await, 0);
    assert_eq!(audited(&f, "delete_customer").await, 1);
}
on_every_backend!(
    confirmed_twice_at_once,
    a_confirmation_sent_twice_at_once_is_answered_as_decided,
    |backend| faulty(backend),
    threads = 2
);

/// A refused confirmation says the action was decided already, not that its record changed
/// or is missing.
fn told_decided(refused: &Value) {
    assert_eq!(refused["code"], "conflict", "{refused}");
    let message = refused["message"].as_str().unwrap_or_default();
    assert!(message.contains("already confirmed"), "{refused}");
    assert!(!message.contains("changed"), "{refused}");
}

/// The same, with the first confirmation's batch read answered item by item (as DynamoDB
/// may): its pending action read before the second deleted the customer, the customer after.
/// It is told the action was decided, not that there is no such customer (which sends a
/// model to look for her among the others).
async fn a_confirmation_finding_its_record_gone_is_answered_as_decided(f: Faulty) {
    let (held, _) = confirmation_finding_its_record_gone(&f, false).await;
    let refused = held.structured();
    told_decided(refused);
    assert_eq!(refused["status"], "used", "{refused}");
    assert_eq!(count(&f, "acme#customer").await, 0);
    assert_eq!(audited(&f, "delete_customer").await, 1);
}
on_every_backend!(
    record_gone_at_confirmation,
    a_confirmation_finding_its_record_gone_is_answered_as_decided,
    |backend| faulty(backend),
    threads = 2
);

/// The same, with the store failing when the held confirmation reads its pending action
/// again: whether the other call decided it is unknown, so it is told to try again (and the
/// retry is told the decision), not that there is no such customer.
async fn a_confirmation_unsure_of_its_decision_is_told_to_retry(f: Faulty) {
    let (held, retry) = confirmation_finding_its_record_gone(&f, true).await;
    let refused = held.structured();
    assert_eq!(refused["code"], "unavailable", "{refused}");
    assert!(refused["retry_after_seconds"].is_i64(), "{refused}");
    told_decided(retry.await.structured());
    assert_eq!(audited(&f, "delete_customer").await, 1);
}
on_every_backend!(
    decision_unread_at_confirmation,
    a_confirmation_unsure_of_its_decision_is_told_to_retry,
    |backend| faulty(backend),
    threads = 2
);

/// Grace's deletion confirmed twice: the first confirmation's batch read answered item by item
/// (as DynamoDB may), its pending action before the second confirmation deleted her, the
/// customer after; with `reread_fails`, the store fails its next read of the pending action.
/// The first confirmation's answer, and its retry (to send).
async fn confirmation_finding_its_record_gone(
    f: &Faulty,
    reread_fails: bool,
) -> (ToolCall, impl std::future::Future<Output = ToolCall>) {
    let c = f.world.client(&f.token);
    let prepared = crate::support::deletion::prepare(&c, "grace@example.com").await;
    let reading = |call: &Call| call.op == Op::BatchGet && call.touches("pending");
    let (read, gate) = (Gate::new(), Gate::new());
    let apart = Fault::ReadApart {
        first: "pending",
        read: read.clone(),
        until: gate.clone(),
    };
    f.store.on(reading, apart, 1);
    let held = c.call_tool("confirm_action", prepared.confirm_arguments.clone());
    let meanwhile = async {
        // Once the held call has read its pending action (still pending).
        read.passed().await;
        let answer = c
            .call_tool("confirm_action", prepared.confirm_arguments.clone())
            .await;
        if reread_fails {
            let rereading = |call: &Call| call.op == Op::Get && call.touches("pending");
            f.store.on(rereading, Fault::Fail, 1);
        }
        gate.open();
        answer
    };
    let (held, meanwhile) = tokio::join!(held, meanwhile);
    assert!(!meanwhile.is_error(), "{}", meanwhile.text());
    let retry = async move {
        c.call_tool("confirm_action", prepared.confirm_arguments)
            .await
    };
    (held, retry)
}

/// The same through the approvals page: a member approves on the page while the agent's own
/// confirmation deletes the customer between the page's reads (its read of the customer held
/// until the agent's answer). The page says the action was decided already, not that the
/// customer is missing.
async fn a_page_approval_finding_its_record_gone_says_it_was_decided(f: Faulty) {
    f.world.member("acme", "bea", "owner").await;
    let c = f.world.client(&f.token);
    let prepared = crate::support::deletion::prepare(&c, "grace@example.com").await;
    let token = prepared.preview["confirm_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let (cookie, csrf) = crate::web::sign_in(&f.world, "acme", "bea").await;
    let (path, form) = (
        format!("/app/approvals/{token}"),
        format!("decision=approve&csrf={csrf}"),
    );
    let headers = [crate::web::FORM, ("cookie", &cookie)];
    let page = crate::web::send(&f.world, "POST", &path, &headers, &form);
    let agent = c.call_tool("confirm_action", prepared.confirm_arguments.clone());
    // The page reads the pending action, then the customer on its own.
    let reading = |call: &Call| call.op == Op::Get && call.touches("customer");
    let (page, agent) = held_during(&f, reading, page, agent).await;
    assert!(!agent.is_error(), "{}", agent.text());
    assert!(page.body.contains("already confirmed"), "{}", page.body);
    assert!(!page.body.contains("There is no customer"), "{}", page.body);
    assert_eq!(audited(&f, "delete_customer").await, 1);
}
on_every_backend!(
    record_gone_at_page_approval,
    a_page_approval_finding_its_record_gone_says_it_was_decided,
    |backend| faulty(backend),
    threads = 2
);

/// A rejection sent while the same action's confirmation executes (its commit held until the
/// confirmation has answered): it is told the action was executed, not only that it is no
/// longer pending (which leaves the user thinking their "no" may have stopped it).
async fn a_rejection_losing_to_the_confirmation_is_told_it_ran(f: Faulty) {
    let c = f.world.client(&f.token);
    let prepared = crate::support::deletion::prepare(&c, "grace@example.com").await;
    let token = json!({"confirm_token": prepared.preview["confirm_token"]});
    let rejecting = |call: &Call| call.op == Op::Transact && call.touches("pending");
    let reject = c.call_tool("reject_action", token);
    let confirm = c.call_tool("confirm_action", prepared.confirm_arguments.clone());
    let (rejected, confirmed) = held_during(&f, rejecting, reject, confirm).await;
    assert!(!confirmed.is_error(), "{}", confirmed.text());
    let refused = rejected.structured();
    told_decided(refused);
    assert_eq!(refused["status"], "used", "{refused}");
    assert_eq!(count(&f, "acme#customer").await, 0);
}
on_every_backend!(
    rejected_while_confirmed,
    a_rejection_losing_to_the_confirmation_is_told_it_ran,
    |backend| faulty(backend),
    threads = 2
);
