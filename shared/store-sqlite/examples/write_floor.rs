//! What one silent write costs in the embedded store, without the server around it (issue 17).
//!
//!     cargo build --release -p store-sqlite --example write_floor
//!     taskset -c 0 target/release/examples/write_floor [--group 8] [--writes 40000]
//!         [--only sqlite|store] [--synchronous FULL|NORMAL] [--json]
//!
//! Both parts write what a silent `create_customer` leaves in the store: four rows (the
//! customer, its e-mail's claim, the replay record, the audit row) of the sizes seen in a real
//! file (143, 43, 920 and 259 bytes), read first as the store reads them, GROUP writes sharing
//! one durable commit (default 8, about what the server's writer gathers under 16 clients).
//!
//! - `sqlite`: the same SQL, the same pragmas and the same savepoints as the store's writer,
//!   from one thread: the floor SQLite sets for a durable write on this machine.
//! - `store`: GROUP tasks calling `SqliteStore::transact_write` on one runtime thread, through
//!   the store's writer thread (group commit, commit labels in the gate file, items as JSON).
//!
//! Prints the process's CPU time (user + system) and the wall time per write of each.

// A benchmark's output is its printed lines.
#![allow(clippy::print_stdout)]

use std::time::Instant;

use rusqlite::{Connection, params};
use store::{Condition, Item, Key, Put, Store, TransactOp, Value};
use store_sqlite::SqliteStore;

/// Body lengths of the four rows of one silent write, as found in a server's file.
const ROWS: [(&str, usize); 4] = [
    ("customer", 143),
    ("claim", 43),
    ("replay", 920),
    ("audit", 259),
];

fn main() {
    let options = Options::from_args();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let (group, writes) = (options.group, options.writes);
    if options.only.as_deref() != Some("store") {
        let path = dir.path().join("floor.db");
        let sync = options.synchronous.as_str();
        let (cpu, wall) = measure(|| sqlite_floor(&path, sync, group, writes));
        report(
            &options,
            &format!("sqlite, synchronous = {sync}"),
            cpu,
            wall,
        );
    }
    if options.only.as_deref() != Some("sqlite") {
        let path = dir.path().join("store.db");
        let (cpu, wall) = measure(|| through_store(&path, group, writes));
        report(&options, "store", cpu, wall);
    }
}

/// The command line: `--group N --writes N --only sqlite|store --synchronous FULL|NORMAL`, and
/// `--json` for one JSON line per part.
struct Options {
    json: bool,
    group: usize,
    writes: usize,
    only: Option<String>,
    synchronous: String,
}

impl Options {
    fn from_args() -> Self {
        let mut options = Options {
            json: false,
            group: 8,
            writes: 40_000,
            only: None,
            synchronous: "FULL".into(),
        };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            if flag == "--json" {
                options.json = true;
                continue;
            }
            let value = args
                .next()
                .unwrap_or_else(|| panic!("{flag} needs a value"));
            let number = || {
                value
                    .parse()
                    .unwrap_or_else(|_| panic!("{flag} is a number"))
            };
            match flag.as_str() {
                "--group" => options.group = number(),
                "--writes" => options.writes = number(),
                "--only" => options.only = Some(value),
                // NORMAL syncs the log only at checkpoints: what SQLite costs without durability.
                "--synchronous" => options.synchronous = value,
                other => panic!("unknown option {other}"),
            }
        }
        assert!(options.group > 0, "--group is at least 1");
        options
    }
}

/// Prints one part's figures: a line of text, or with `--json` one JSON object.
fn report(options: &Options, what: &str, cpu: f64, wall: f64) {
    let line = match options.json {
        true => json_line(options, what, cpu, wall),
        false => text_line(options, what, cpu, wall),
    };
    println!("{line}");
}

/// The shape of `loadgen`'s result lines, which tests/bench/peers.sh reads.
fn json_line(options: &Options, what: &str, cpu: f64, wall: f64) -> String {
    let (group, writes) = (options.group, options.writes);
    let rate = writes as f64 / wall;
    let cpu_us = cpu / writes as f64 * 1e6;
    let label = format!("{what}, group {group}");
    format!(
        r#"{{"label":"{label}","calls":{writes},"calls_per_s":{rate:.1},"cpu_us_per_call":{cpu_us:.1}}}"#
    )
}

fn text_line(options: &Options, what: &str, cpu: f64, wall: f64) -> String {
    let (group, writes) = (options.group, options.writes);
    let per_write = |seconds: f64| seconds / writes as f64 * 1e6;
    format!(
        "{what:<28} group {group:>2}: {writes} writes, CPU {:.1} us/write, wall {:.1} us/write ({:.0}/s)",
        per_write(cpu),
        per_write(wall),
        writes as f64 / wall
    )
}

/// CPU seconds (user + system, every thread) and wall seconds that `work` took.
fn measure(work: impl FnOnce()) -> (f64, f64) {
    let (cpu, start) = (cpu_seconds(), Instant::now());
    work();
    (cpu_seconds() - cpu, start.elapsed().as_secs_f64())
}

fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // Fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let rest = &stat[stat.rfind(')').expect("a stat line") + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks = |i: usize| fields[i].parse::<f64>().expect("a tick count");
    // Linux counts them in hundredths of a second (USER_HZ).
    (ticks(11) + ticks(12)) / 100.0
}

/// The keys of write `n` (of one of 16 connections), in the shapes the server uses.
fn keys_of(n: usize, random: &mut Random) -> [Key; 4] {
    let connection = n % 16;
    [
        Key::new("acme#customer", random.text(20)),
        Key::new(
            "acme#unique#customer-email",
            format!(
                "load.18ee15edb11e85b0p23289-{connection}-{}@example.com",
                n / 16
            ),
        ),
        Key::new(
            format!("acme#replay#con_{connection:020}"),
            format!("create_customer#{}", random.text(64)),
        ),
        Key::new(
            "acme#audit",
            format!("2026-12-04T15:16:53.{n:09}Z#req_{n:016}"),
        ),
    ]
}

fn sqlite_floor(path: &std::path::Path, synchronous: &str, group: usize, writes: usize) {
    write_rows(path, synchronous, group, writes).expect("SQLite wrote the rows");
}

/// `writes` writes of four rows each, `group` to a synced commit, as the store's writer runs
/// them.
fn write_rows(
    path: &std::path::Path,
    synchronous: &str,
    group: usize,
    writes: usize,
) -> rusqlite::Result<()> {
    // The store makes the file (its table, key index and log) as it makes its own; the writes
    // then run on a connection of their own with the writer's settings.
    drop(SqliteStore::open(path).expect("the store made its file"));
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "synchronous", synchronous)?;
    conn.execute_batch("PRAGMA cache_size = -4096; PRAGMA wal_autocheckpoint = 10000;")?;
    let control = |sql: &str| conn.prepare_cached(sql)?.execute([]).map(|_| ());
    let mut random = Random(0x9e37_79b9_7f4a_7c15);
    let mut n = 0;
    while n < writes {
        control("BEGIN IMMEDIATE")?;
        for _ in 0..group.min(writes - n) {
            control("SAVEPOINT job")?;
            for (key, (_, len)) in keys_of(n, &mut random).iter().zip(ROWS) {
                upsert(&conn, key, &"x".repeat(len))?;
            }
            control("RELEASE job")?;
            n += 1;
        }
        control("COMMIT")?;
    }
    Ok(())
}

/// A point read and an upsert, with the store's statements.
fn upsert(conn: &Connection, key: &Key, body: &str) -> rusqlite::Result<()> {
    let mut read = conn.prepare_cached("SELECT body FROM items WHERE pk = ?1 AND sk = ?2")?;
    let mut rows = read.query(params![key.pk, key.sk])?;
    while rows.next()?.is_some() {}
    conn.prepare_cached(
        "INSERT INTO items (pk, sk, expires_at, body) VALUES (?1, ?2, ?3, ?4) \
         ON CONFLICT (pk, sk) DO UPDATE SET expires_at = excluded.expires_at, body = excluded.body",
    )?
    .execute(params![key.pk, key.sk, None::<i64>, body])?;
    Ok(())
}

fn through_store(path: &std::path::Path, group: usize, writes: usize) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let store = SqliteStore::open(path).expect("the store");
    runtime.block_on(async {
        let tasks: Vec<_> = (0..group)
            .map(|task| {
                let store = store.clone();
                let mut random = Random(0x2545_f491_4f6c_dd1d ^ task as u64);
                tokio::spawn(async move {
                    for n in (task..writes).step_by(group) {
                        let ops = keys_of(n, &mut random)
                            .into_iter()
                            .zip(ROWS)
                            .map(|(key, (_, len))| op(key, len))
                            .collect();
                        store.transact_write(ops).await.expect("a write");
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("a task");
        }
    });
}

/// A put of one text attribute of `len` bytes that must not overwrite an item.
fn op(key: Key, len: usize) -> TransactOp {
    let item = Item::from([("body".to_owned(), Value::S("x".repeat(len)))]);
    TransactOp::Put(Put::new(key, item).when(Condition::item_not_exists()))
}

/// xorshift64: keys spread like random ids, the same in every run.
struct Random(u64);

impl Random {
    fn text(&mut self, len: usize) -> String {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        (0..len)
            .map(|_| {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                ALPHABET[(self.0 % ALPHABET.len() as u64) as usize] as char
            })
            .collect()
    }
}
