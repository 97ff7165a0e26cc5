//! Bounded-time fuzzing, on stable Rust, of everything that reads an untrusted file: the history
//! importers (JSON exports, Takeout search HTML, browser SQLite databases, Takeout zips) and the
//! document extractors (HTML, PDF, DOCX, Markdown, text).
//!
//! Each target is one test. It runs its seeds (the real fixtures, generated documents and a few
//! adversarial files) unchanged, then mutated, for `RUDDER_FUZZ_SECONDS` seconds (3 when unset,
//! so a plain `cargo test` stays quick), and checks every input for a panic, a hang (one input
//! over 10 s saves it and aborts the run) and a peak of live heap bytes over
//! `20 × input + ALLOC_FLOOR` (64× for HTML, parsed into a DOM). Failing inputs are saved under
//! `test-artifacts/fuzz/<target>/`.
//!
//! Input `i` of a target is a pure function of the target's seed and `i` (no coverage feedback,
//! no shared state), so the printed seed and iteration reproduce any failure:
//! `RUDDER_FUZZ_SEED=<seed> RUDDER_FUZZ_REPLAY=<i>` runs just that input.
//!
//! The regression tests for what the fuzzer found are at the end of the file.

use rudder_testkit::fixtures_gen;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use rudder::history::import::{
    collect, detect, parse_file_in, Detected, Format as HistoryFormat, InputFile,
};
use rudder::history::Record;
use rudder::sources::docs::extract::{extract, Format as DocFormat};

// ---------------------------------------------------------------------------------------------
// Limits

/// Allowed peak of live heap bytes per input byte.
const ALLOC_FACTOR: usize = 20;

/// The same for HTML, which is parsed into a DOM: a node costs about 150 bytes however short
/// its tag, so tag-dense input (the fuzzer found `<h- - - …` soups of ~6 bytes per tag at 28×)
/// legitimately needs more. 64× still catches anything super-linear.
const HTML_ALLOC_FACTOR: usize = 64;

/// The allowance per input byte of a fuzz target.
fn alloc_factor(target: &str) -> usize {
    if target.ends_with("html") {
        HTML_ALLOC_FACTOR
    } else {
        ALLOC_FACTOR
    }
}

/// Fixed allowance on top of `ALLOC_FACTOR × input`, for what is allocated whatever the input's
/// size: mostly the importers' two 256 KiB I/O buffers (the detection head and the
/// `BufReader`), plus SQLite's connection and parsed schema, the zip reader's tables and the
/// PDF reader's font tables. Measured on the unmutated seeds, the largest need (peak minus
/// 20× the input) was 536,738 bytes (the 2.6 KB Takeout zip holding a Chrome database); 1 MiB
/// leaves about 2× margin.
const ALLOC_FLOOR: usize = 1 << 20;

/// One input running longer than this is a hang.
const HANG_AFTER: Duration = Duration::from_secs(10);

/// Saved failing inputs per target; the count of failures goes on beyond it.
const MAX_SAVED: usize = 20;

// ---------------------------------------------------------------------------------------------
// Allocation accounting

/// The system allocator, counting the bytes live on each thread and their peak. Each target runs
/// on its own test thread and the code under test allocates on the calling thread (SQLite, the
/// PDF reader and html5ever start no threads), so per-thread counts are per-input counts.
struct CountingAlloc;

thread_local! {
    // `const`-initialised and without a destructor, so using them never allocates: the
    // allocator itself reads them.
    static LIVE: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
    static PEAK: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
}

fn count(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| {
            if now > peak.get() {
                peak.set(now);
            }
        });
    });
}

// SAFETY: every call is forwarded unchanged to `System`; the counting touches only `Cell`s.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = unsafe { std::alloc::System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        let p = unsafe { std::alloc::System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        unsafe { std::alloc::System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { std::alloc::System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Starts measuring this thread's peak; returns the baseline for [`peak_since`].
fn measure_start() -> isize {
    let live = LIVE.with(|l| l.get());
    PEAK.with(|p| p.set(live));
    live
}

/// The most bytes live on this thread above `baseline` since [`measure_start`].
fn peak_since(baseline: isize) -> usize {
    (PEAK.with(|p| p.get()) - baseline).max(0) as usize
}

/// SQLite allocates with the C library's `malloc`, which the counting allocator never sees. This
/// routes it through Rust's global allocator (a size header before each block), so a database's
/// page cache and parsed schema count against the input like any other allocation.
mod sqlite_alloc {
    use std::alloc::Layout;
    use std::ffi::{c_int, c_void};

    use rusqlite::ffi;

    /// Room for the block's size, keeping the 8-byte alignment SQLite asks for (16 for safety).
    const HEADER: usize = 16;

    fn layout(size: usize) -> Option<Layout> {
        Layout::from_size_align(size.checked_add(HEADER)?, HEADER).ok()
    }

    unsafe extern "C" fn x_malloc(n: c_int) -> *mut c_void {
        let Some(layout) = usize::try_from(n).ok().and_then(layout) else {
            return std::ptr::null_mut();
        };
        // SAFETY: the layout is non-zero-sized; the header is written inside the block.
        unsafe {
            let base = std::alloc::alloc(layout);
            if base.is_null() {
                return std::ptr::null_mut();
            }
            base.cast::<usize>().write(layout.size() - HEADER);
            base.add(HEADER).cast()
        }
    }

    unsafe extern "C" fn x_free(p: *mut c_void) {
        if p.is_null() {
            return;
        }
        // SAFETY: `p` came from `x_malloc`/`x_realloc`, which put the size `HEADER` bytes before.
        unsafe {
            let base = p.cast::<u8>().sub(HEADER);
            let size = base.cast::<usize>().read();
            std::alloc::dealloc(base, layout(size).expect("valid when allocated"));
        }
    }

    unsafe extern "C" fn x_realloc(p: *mut c_void, n: c_int) -> *mut c_void {
        let Some(new) = usize::try_from(n).ok().and_then(layout) else {
            return std::ptr::null_mut();
        };
        // SAFETY: as in `x_free`; SQLite never reallocates a null pointer through this hook.
        unsafe {
            let base = p.cast::<u8>().sub(HEADER);
            let size = base.cast::<usize>().read();
            let old = layout(size).expect("valid when allocated");
            let moved = std::alloc::realloc(base, old, new.size());
            if moved.is_null() {
                return std::ptr::null_mut();
            }
            moved.cast::<usize>().write(new.size() - HEADER);
            moved.add(HEADER).cast()
        }
    }

    unsafe extern "C" fn x_size(p: *mut c_void) -> c_int {
        if p.is_null() {
            return 0;
        }
        // SAFETY: as in `x_free`.
        unsafe { p.cast::<u8>().sub(HEADER).cast::<usize>().read() as c_int }
    }

    unsafe extern "C" fn x_roundup(n: c_int) -> c_int {
        (n + 7) & !7
    }

    unsafe extern "C" fn x_init(_: *mut c_void) -> c_int {
        ffi::SQLITE_OK
    }

    unsafe extern "C" fn x_shutdown(_: *mut c_void) {}

    /// Installs the hooks; must run before SQLite is first used in this process.
    pub fn install() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let methods = ffi::sqlite3_mem_methods {
                xMalloc: Some(x_malloc),
                xFree: Some(x_free),
                xRealloc: Some(x_realloc),
                xSize: Some(x_size),
                xRoundup: Some(x_roundup),
                xInit: Some(x_init),
                xShutdown: Some(x_shutdown),
                pAppData: std::ptr::null_mut(),
            };
            // SAFETY: SQLite copies the struct; the functions live for the whole process.
            let rc = unsafe {
                ffi::sqlite3_config(
                    ffi::SQLITE_CONFIG_MALLOC,
                    &methods as *const ffi::sqlite3_mem_methods,
                )
            };
            assert_eq!(
                rc,
                ffi::SQLITE_OK,
                "SQLite was initialised before the fuzzer"
            );
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Mutation engine

/// Format tokens worth inserting whole: they open, close or break the structures the parsers
/// track (JSON, HTML/XML, PDF objects, zip records, Markdown blocks, encodings).
const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b",",
    b":",
    b"<",
    b">",
    b"</div>",
    b"<div>",
    b"\\u0000",
    b"\\ud800",
    b"\\",
    b"\0",
    b"null",
    b"true",
    b"\"\":",
    b"<!--",
    b"-->",
    b"<![CDATA[",
    b"]]>",
    b"<script>",
    b"</script>",
    b"&#0;",
    b"&#x110000;",
    b"&amp",
    b"<meta charset=\"shift_jis\">",
    b"<w:p>",
    b"</w:p>",
    b"<w:t>",
    b"</w:t>",
    b"<w:tab/>",
    b"%PDF-1.7\n",
    b" 0 obj\n",
    b"endobj\n",
    b"stream\n",
    b"\nendstream",
    b"<<",
    b">>",
    b" 0 R",
    b"/Length 99999999",
    b"/Filter /FlateDecode",
    b"/Type /ObjStm /N 2147483647",
    b"xref\n0 9999999\n",
    b"trailer\n",
    b"startxref\n",
    b"%%EOF",
    b"PK\x03\x04",
    b"PK\x01\x02",
    b"PK\x05\x06",
    b"PK\x06\x06",
    b"\xef\xbb\xbf",
    b"\xff\xfe",
    b"\xfe\xff",
    b"\xc3",
    b"\xf4\x90\x80\x80",
    b"\r\n",
    b"\n> ",
    b"\n- ",
    b"\n```",
    b"\n---\n",
    b"|",
    b"[^1]: ",
    b"https://www.google.com/search?q=",
    b"\"time\":",
    b"\"title\":",
    b"\"mapping\":",
    b"\"chat_messages\":",
];

/// Numbers that sit on the edges parsers get wrong, as text.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "-0",
    "1e308",
    "1e999",
    "-1e999",
    "0.0000000001",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775809",
    "18446744073709551616",
    "99999999999999999999999999999",
    "253402300800",
    "-62135596801",
    "NaN",
];

/// Integers that sit on the edges of their width, written in binary (sizes and offsets in
/// SQLite pages and zip records).
const INTS: &[u64] = &[
    0,
    1,
    0x7f,
    0x80,
    0xff,
    0x7fff,
    0x8000,
    0xffff,
    0x1_0000,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    i64::MAX as u64,
    u64::MAX,
];

/// Pairs for nesting a range many levels deep.
const NESTS: &[(&[u8], &[u8])] = &[
    (b"[", b"]"),
    (b"{\"a\":", b"}"),
    (b"<div>", b"</div>"),
    (b"<b><i>", b"</i></b>"),
    (b"<table><tr><td>", b"</td></tr></table>"),
    (b"<<", b">>"),
    (b"[", b"]\n"),
    (b"> ", b""),
    (b"- ", b"\n"),
    (b"<w:p><w:r>", b"</w:r></w:p>"),
];

struct Mutator<'a> {
    seeds: &'a [Seed],
    max_len: usize,
}

impl Mutator<'_> {
    /// Input `iteration` of the run seeded `seed`: one of the seeds with 1 to 16 stacked
    /// mutations. Returns the seed's index (whose file name the input takes) and the bytes.
    fn input(&self, seed: u64, iteration: u64) -> (usize, Vec<u8>) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(iteration);
        // Mostly the small seeds: a big adversarial seed costs a hundred small inputs' time.
        let small: Vec<usize> = (0..self.seeds.len())
            .filter(|&i| self.seeds[i].bytes.len() <= 64 << 10)
            .collect();
        let which = if !small.is_empty() && rng.random_bool(0.8) {
            small[rng.random_range(0..small.len())]
        } else {
            rng.random_range(0..self.seeds.len())
        };
        let mut data = self.seeds[which].bytes.clone();
        let rounds = 1usize << rng.random_range(0..5);
        for _ in 0..rounds {
            self.mutate(&mut rng, &mut data);
            data.truncate(self.max_len);
        }
        (which, data)
    }

    fn mutate(&self, rng: &mut ChaCha8Rng, data: &mut Vec<u8>) {
        let len = data.len();
        let pos = |rng: &mut ChaCha8Rng| rng.random_range(0..=len);
        // A range length, mostly short, sometimes large.
        let span = |rng: &mut ChaCha8Rng, from: usize| {
            let room = len - from;
            let cap = if rng.random_bool(0.8) {
                32
            } else {
                room.max(1)
            };
            rng.random_range(0..=room.min(cap))
        };
        match rng.random_range(0..14) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                data[i] ^= 1 << rng.random_range(0..8);
            }
            1 if len > 0 => {
                let i = rng.random_range(0..len);
                data[i] = rng.random();
            }
            2 if len > 0 => {
                const BYTES: &[u8] = b"\x00\x01\x7f\x80\xff 09\n\\\"<>{}[]/&";
                let i = rng.random_range(0..len);
                data[i] = BYTES[rng.random_range(0..BYTES.len())];
            }
            3 => {
                let value = INTS[rng.random_range(0..INTS.len())];
                let value = if rng.random_bool(0.2) {
                    value.wrapping_neg()
                } else {
                    value
                };
                let width = [1, 2, 4, 8][rng.random_range(0..4)];
                let bytes = if rng.random_bool(0.5) {
                    value.to_le_bytes()[..width].to_vec()
                } else {
                    value.to_be_bytes()[8 - width..].to_vec()
                };
                let at = rng.random_range(0..=len.saturating_sub(width));
                let end = (at + width).min(len);
                data.splice(at..end, bytes);
            }
            4 => {
                // Replace a run of digits (a timestamp, a length) with an edge number.
                let at = pos(rng);
                let start = data[..at]
                    .iter()
                    .rposition(|b| !b.is_ascii_digit())
                    .map_or(0, |i| i + 1);
                let end = data[at..]
                    .iter()
                    .position(|b| !b.is_ascii_digit())
                    .map_or(len, |i| at + i);
                let number = NUMBERS[rng.random_range(0..NUMBERS.len())];
                data.splice(start..end, number.bytes());
            }
            5 => {
                let token = TOKENS[rng.random_range(0..TOKENS.len())];
                let at = pos(rng);
                data.splice(at..at, token.iter().copied());
            }
            6 => {
                let token = TOKENS[rng.random_range(0..TOKENS.len())];
                let at = pos(rng);
                let end = (at + token.len()).min(len);
                data.splice(at..end, token.iter().copied());
            }
            7 => {
                let at = pos(rng);
                let n = span(rng, at);
                data.drain(at..at + n);
            }
            8 => {
                // Duplicate a range, usually once, sometimes hundreds of times (long arrays,
                // many elements: what makes a parser's memory grow with the input).
                let from = pos(rng);
                let n = span(rng, from).max(1).min(len - from);
                let times = if rng.random_bool(0.9) {
                    1
                } else {
                    rng.random_range(2..=1000)
                };
                let chunk = data[from..from + n].to_vec();
                let at = pos(rng);
                let budget = self.max_len.saturating_sub(len) / chunk.len().max(1);
                let times = times.min(budget);
                data.splice(at..at, chunk.iter().copied().cycle().take(n * times));
            }
            9 => data.truncate(pos(rng)),
            10 => {
                // Splice: a prefix of this input and a suffix of another seed.
                let other = &self.seeds[rng.random_range(0..self.seeds.len())].bytes;
                let at = pos(rng);
                let from = rng.random_range(0..=other.len());
                data.truncate(at);
                data.extend_from_slice(&other[from..]);
            }
            11 => {
                // Nest a range many levels deep.
                let (open, close) = NESTS[rng.random_range(0..NESTS.len())];
                let depth = match rng.random_range(0..3) {
                    0 => rng.random_range(1..=8),
                    1 => rng.random_range(100..=300),
                    _ => rng.random_range(1_000..=20_000),
                };
                let budget = self.max_len.saturating_sub(len) / (open.len() + close.len());
                let depth = depth.min(budget);
                let a = pos(rng);
                let b = rng.random_range(a..=len);
                data.splice(
                    b..b,
                    close.iter().copied().cycle().take(close.len() * depth),
                );
                data.splice(a..a, open.iter().copied().cycle().take(open.len() * depth));
            }
            12 if len > 0 => {
                // Copy a range over another place in the same input.
                let from = rng.random_range(0..len);
                let n = span(rng, from);
                let chunk = data[from..from + n].to_vec();
                let at = rng.random_range(0..len);
                let end = (at + n).min(len);
                data.splice(at..end, chunk);
            }
            _ => {
                let at = pos(rng);
                let n = rng.random_range(1..=16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.random()).collect();
                data.splice(at..at, bytes);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Harness

/// A starting input, and the file name (relative path) its mutants are written under: format
/// detection reads the name and folder.
#[derive(Clone)]
struct Seed {
    name: String,
    bytes: Vec<u8>,
}

fn seed(name: &str, bytes: impl Into<Vec<u8>>) -> Seed {
    Seed {
        name: name.to_string(),
        bytes: bytes.into(),
    }
}

/// What the watchdog knows about the input being run.
struct Running {
    started: Option<Instant>,
    iteration: u64,
    input: Vec<u8>,
    file_name: String,
}

/// A thread that aborts the process, after saving the input, when one input runs too long: a
/// hang must fail the run, not stall it.
struct Watchdog {
    running: Arc<Mutex<Running>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    fn start(target: &'static str, dir: PathBuf) -> Self {
        let running = Arc::new(Mutex::new(Running {
            started: None,
            iteration: 0,
            input: Vec::new(),
            file_name: String::new(),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (running, stop) = (running.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                    let now = running.lock().unwrap_or_else(|e| e.into_inner());
                    if now.started.is_some_and(|t| t.elapsed() > HANG_AFTER) {
                        let path = dir.join(format!(
                            "hang-{}-{}",
                            now.iteration,
                            flat_name(&now.file_name)
                        ));
                        let saved = std::fs::write(&path, &now.input);
                        eprintln!(
                            "fuzz {target}: input {} ran over {HANG_AFTER:?} (a hang); saved to \
                             {} ({saved:?}); aborting",
                            now.iteration,
                            path.display()
                        );
                        std::process::abort();
                    }
                }
            })
        };
        Self {
            running,
            stop,
            thread: Some(thread),
        }
    }

    fn begin(&self, iteration: u64, input: &[u8], file_name: &str) {
        let mut now = self.running.lock().unwrap();
        now.iteration = iteration;
        now.input.clear();
        now.input.extend_from_slice(input);
        now.file_name.clear();
        now.file_name.push_str(file_name);
        now.started = Some(Instant::now());
    }

    fn end(&self) {
        self.running.lock().unwrap().started = None;
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `My Activity/Search/MyActivity.json` → `MyActivity.json`, for saved inputs.
fn flat_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

/// A fixed seed per target (FNV-1a of its name), so runs repeat unless `RUDDER_FUZZ_SEED` says.
fn target_seed(target: &str) -> u64 {
    env_u64("RUDDER_FUZZ_SEED").unwrap_or_else(|| {
        target.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
    })
}

fn artifacts(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("test-artifacts/fuzz")
        .join(target)
}

/// Runs `run` on every seed, then on mutants until the time is up; fails listing the saved
/// inputs that panicked or allocated too much. `run` gets the target's work folder (where
/// importers write the input under its seed's name), the seed, and the input.
///
/// `RUDDER_FUZZ_FILE=<path>` runs that one file instead (a saved failure), under the name of
/// the seed its file name ends with.
fn fuzz(target: &'static str, seeds: Vec<Seed>, run: impl Fn(&Path, &Seed, &[u8])) {
    sqlite_alloc::install();
    let seconds: f64 = std::env::var("RUDDER_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(3.0);
    let rng_seed = target_seed(target);
    let replay = env_u64("RUDDER_FUZZ_REPLAY");
    let file = std::env::var_os("RUDDER_FUZZ_FILE").map(|path| {
        let path = PathBuf::from(path);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        (path, bytes)
    });
    let single = replay.is_some() || file.is_some();
    let dir = artifacts(target);
    if !single {
        // Each full run starts clean, so what is saved is what this run found.
        let _ = std::fs::remove_dir_all(&dir);
    }
    let work = dir.join("current");
    for s in &seeds {
        let path = work.join(&s.name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    }
    let largest = seeds.iter().map(|s| s.bytes.len()).max().unwrap_or(0);
    let mutator = Mutator {
        seeds: &seeds,
        max_len: (2 * largest).clamp(256 << 10, 8 << 20),
    };
    println!(
        "fuzz {target}: seed {rng_seed:#x}, {} seeds, {seconds} s (RUDDER_FUZZ_SEED={rng_seed:#x} \
         RUDDER_FUZZ_REPLAY=<iteration> reruns one input)",
        seeds.len()
    );
    // Input `i`: the seeds unchanged first, then mutants; or the one file asked for.
    let input_for = |iteration: u64| -> (usize, Vec<u8>) {
        if let Some((path, bytes)) = &file {
            let name = path.file_name().unwrap().to_string_lossy();
            let which = seeds
                .iter()
                .position(|s| name.ends_with(flat_name(&s.name)))
                .unwrap_or(0);
            (which, bytes.clone())
        } else if (iteration as usize) < seeds.len() {
            (iteration as usize, seeds[iteration as usize].bytes.clone())
        } else {
            mutator.input(rng_seed, iteration)
        }
    };

    let watchdog = Watchdog::start(target, dir.clone());
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(seconds);
    let mut failures: Vec<String> = Vec::new();
    let mut failed = 0usize;
    let mut seed_peaks: Vec<String> = Vec::new();
    let mut slowest = (Duration::ZERO, 0u64);
    let first = replay.unwrap_or(0);
    let mut iteration = first;
    loop {
        let (which, input) = input_for(iteration);
        let s = &seeds[which];
        watchdog.begin(iteration, &input, &s.name);
        let t0 = Instant::now();
        let baseline = measure_start();
        let outcome = catch_unwind(AssertUnwindSafe(|| run(&work, s, &input)));
        let peak = peak_since(baseline);
        let took = t0.elapsed();
        watchdog.end();
        if took > slowest.0 {
            slowest = (took, iteration);
        }
        let limit = alloc_factor(target) * input.len() + ALLOC_FLOOR;
        if single || (iteration as usize) < seeds.len() {
            seed_peaks.push(format!(
                "  {}: {} bytes in, peak {peak} ({:.1}x), {:.0?}",
                s.name,
                input.len(),
                peak as f64 / input.len().max(1) as f64,
                took
            ));
        }
        let problem = match outcome {
            Err(panic) => Some(format!("panic: {}", panic_message(&panic))),
            Ok(()) if peak > limit => Some(format!(
                "allocated {peak} bytes at peak for a {}-byte input (limit {limit})",
                input.len()
            )),
            Ok(()) => None,
        };
        if let Some(problem) = problem {
            failed += 1;
            if failures.len() < MAX_SAVED {
                let kind = if problem.starts_with("panic") {
                    "panic"
                } else {
                    "alloc"
                };
                let path = dir.join(format!("{kind}-{iteration}-{}", flat_name(&s.name)));
                std::fs::write(&path, &input).unwrap();
                failures.push(format!(
                    "iteration {iteration} (seed {}): {problem}; saved to {}",
                    s.name,
                    path.display()
                ));
            }
        }
        iteration += 1;
        let seeds_done = iteration as usize >= seeds.len();
        if single || (seeds_done && Instant::now() >= deadline) {
            break;
        }
    }
    drop(watchdog);
    let elapsed = started.elapsed().as_secs_f64();
    let execs = iteration - first;
    println!(
        "fuzz {target}: {execs} execs in {elapsed:.1} s ({:.0}/s), {failed} failing, slowest \
         input {:.0?} (iteration {}); unmutated:\n{}",
        execs as f64 / elapsed,
        slowest.0,
        slowest.1,
        seed_peaks.join("\n")
    );
    assert!(
        failures.is_empty(),
        "fuzz {target} (seed {rng_seed:#x}): {failed} failing inputs:\n{}",
        failures.join("\n")
    );
}

fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(not a string)".into())
}

// ---------------------------------------------------------------------------------------------
// Seeds

fn fixture(rel: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// 100,000 levels of `open`, then as many of `close`.
fn deep(open: &str, close: &str) -> Vec<u8> {
    let mut out = open.repeat(100_000);
    out.push_str(&close.repeat(100_000));
    out.into_bytes()
}

/// A 1 MiB string where the format has text, wrapped as `before … after`.
fn long_string(before: &str, after: &str) -> Vec<u8> {
    let mut out = before.to_string();
    out.extend(std::iter::repeat_n("lorem ipsum ", (1 << 20) / 12));
    out.push_str(after);
    out.into_bytes()
}

const SEARCH_JSON: &str = "history/takeout/en/My Activity/Search/MyActivity.json";
const SEARCH_JSON_DE: &str =
    "history/takeout/de/Meine Aktivitäten/Google Suche/MeineAktivitäten.json";
const SEARCH_HTML: &str = "history/takeout/en/My Activity/Search/MyActivity.html";
const SEARCH_HTML_DE: &str =
    "history/takeout/de/Meine Aktivitäten/Google Suche/MeineAktivitäten.html";
const GEMINI_JSON: &str = "history/takeout/en/My Activity/Gemini Apps/MyActivity.json";
const CHROME_JSON: &str = "history/takeout/en/Chrome/BrowserHistory.json";

/// Fixture paths below `history/takeout/<lang>/` keep their Takeout folders, which detection
/// reads; others keep their file name.
fn history_name(rel: &str) -> String {
    match rel.strip_prefix("history/takeout/") {
        Some(rest) => rest.split_once('/').map_or(rest, |(_, r)| r).to_string(),
        None => rel.rsplit('/').next().unwrap().to_string(),
    }
}

fn history_seeds(files: &[&str]) -> Vec<Seed> {
    files
        .iter()
        .map(|rel| seed(&history_name(rel), fixture(rel)))
        .collect()
}

/// Adds the adversarial JSON under the first seed's name: 100,000-deep arrays and objects, and
/// a 1 MiB string in an element every JSON importer half-recognises.
fn with_adversarial_json(mut seeds: Vec<Seed>) -> Vec<Seed> {
    let name = seeds[0].name.clone();
    seeds.push(seed(&name, deep("[", "]")));
    seeds.push(seed(&name, deep("{\"a\":", "}")));
    seeds.push(seed(
        &name,
        long_string(
            r#"[{"header":"Search","title":""#,
            r#"","time":"2024-05-01T09:00:00.000Z","products":["Search"],"mapping":{},"chat_messages":[]}]"#,
        ),
    ));
    seeds
}

const HTML_PAGE: &str = r#"<!doctype html><html><head><title>Bicycle Maintenance</title>
<style>body { font-family: serif; }</style>
<script>var tracking = "secret";</script></head>
<body><nav>Home</nav><h1>Keeping a bike running</h1>
<p>Lubricate the chain every few hundred kilometres.</p>
<table><tr><th>Part</th><td>Chain</td></tr></table><img alt="a bike">
<pre>  kept   as is  </pre><div hidden>gone</div><ul><li>one<li>two</ul>
<p>Check tyre pressure&nbsp;weekly &amp; before long rides.<br>Always.</p></body></html>"#;

/// The generated PDF re-saved with its streams deflated, so mutations reach the decompressor.
fn compressed_pdf() -> Vec<u8> {
    let plain = fixtures_gen::pdf(
        &[fixtures_gen::PDF_PAGE_1, fixtures_gen::PDF_PAGE_2],
        Some("Field Notes"),
    );
    let mut doc = pdf_extract::Document::load_mem(&plain).unwrap();
    doc.compress();
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

// ---------------------------------------------------------------------------------------------
// Runners

/// Writes the input under its seed's name in `work` and imports it: once with each format in
/// `formats` named (so the parser itself runs even when a mutation breaks detection), and once
/// detected, unless detection picks one of those.
fn import(formats: &'static [HistoryFormat]) -> impl Fn(&Path, &Seed, &[u8]) {
    move |work, seed, input| {
        let path = work.join(&seed.name);
        std::fs::write(&path, input).unwrap();
        let file = InputFile::plain(&path);
        let scratch = work.join("scratch");
        let mut sink = |_: Record| Ok(());
        for &format in formats {
            let _ = parse_file_in(&file, Some(format), &scratch, &mut sink);
        }
        let detected = detect(&file);
        if !matches!(detected, Ok(Detected::Format(f)) if formats.contains(&f)) {
            let _ = parse_file_in(&file, None, &scratch, &mut sink);
        }
    }
}

fn docs(formats: &'static [DocFormat]) -> impl Fn(&Path, &Seed, &[u8]) {
    move |_, _, input| {
        for &format in formats {
            let _ = extract(input, format);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Targets

#[test]
fn fuzz_chatgpt() {
    let seeds = with_adversarial_json(history_seeds(&[
        "history/chatgpt/conversations.json",
        "history/chatgpt/conversations-001.json",
    ]));
    fuzz("chatgpt", seeds, import(&[HistoryFormat::Chatgpt]));
}

#[test]
fn fuzz_claude() {
    let seeds = with_adversarial_json(history_seeds(&[
        "history/claude/conversations.json",
        "history/claude/memories.json",
        "history/claude/projects.json",
        "history/claude/users.json",
    ]));
    fuzz(
        "claude",
        seeds,
        import(&[HistoryFormat::Claude, HistoryFormat::ClaudeMemories]),
    );
}

#[test]
fn fuzz_takeout_search_json() {
    let seeds = with_adversarial_json(history_seeds(&[SEARCH_JSON, SEARCH_JSON_DE]));
    fuzz(
        "takeout_search_json",
        seeds,
        import(&[HistoryFormat::TakeoutSearch]),
    );
}

#[test]
fn fuzz_gemini() {
    let seeds = with_adversarial_json(history_seeds(&[GEMINI_JSON]));
    fuzz("gemini", seeds, import(&[HistoryFormat::Gemini]));
}

#[test]
fn fuzz_takeout_chrome() {
    let mut seeds = with_adversarial_json(history_seeds(&[CHROME_JSON]));
    seeds.push(seed(
        &seeds[0].name.clone(),
        long_string(
            r#"{"Browser History":[{"title":""#,
            r#"","url":"https://example.com/","time_usec":1714550400000000}]}"#,
        ),
    ));
    fuzz(
        "takeout_chrome",
        seeds,
        import(&[HistoryFormat::TakeoutChrome]),
    );
}

#[test]
fn fuzz_takeout_search_html() {
    let mut seeds = history_seeds(&[SEARCH_HTML, SEARCH_HTML_DE]);
    let name = seeds[0].name.clone();
    seeds.push(seed(&name, deep("<div>", "</div>")));
    seeds.push(seed(
        &name,
        long_string(
            r#"<html><body><div class="outer-cell mdl-grid"><div class="content-cell">Searched for <a href="https://www.google.com/search?q=x">"#,
            "</a><br>May 1, 2024, 9:00:00 AM UTC</div></div></body></html>",
        ),
    ));
    fuzz(
        "takeout_search_html",
        seeds,
        import(&[HistoryFormat::TakeoutSearchHtml]),
    );
}

#[test]
fn fuzz_chromium_sqlite() {
    let seeds = vec![seed("History", fixture("browser/chrome.sqlite"))];
    fuzz("chromium_sqlite", seeds, import(&[HistoryFormat::Chromium]));
}

#[test]
fn fuzz_firefox_sqlite() {
    let seeds = vec![
        seed("places.sqlite", fixture("browser/firefox.sqlite")),
        seed("places.sqlite", fixture("browser/firefox_mobile.sqlite")),
    ];
    fuzz("firefox_sqlite", seeds, import(&[HistoryFormat::Firefox]));
}

#[test]
fn fuzz_safari_sqlite() {
    let seeds = vec![seed("History.db", fixture("browser/safari.sqlite"))];
    fuzz("safari_sqlite", seeds, import(&[HistoryFormat::Safari]));
}

/// A Takeout download: the archive is expanded by `collect` and every entry imported, as
/// `rudder import takeout.zip` does.
#[test]
fn fuzz_takeout_zip() {
    let search = fixture(SEARCH_JSON);
    let html = fixture(SEARCH_HTML);
    let chrome = fixture(CHROME_JSON);
    let gemini = fixture(GEMINI_JSON);
    let chatgpt = fixture("history/chatgpt/conversations-001.json");
    let entries: Vec<(&str, &[u8])> = vec![
        ("Takeout/My Activity/Search/MyActivity.json", &search),
        ("Takeout/My Activity/Search/MyActivity.html", &html),
        ("Takeout/Chrome/BrowserHistory.json", &chrome),
        ("Takeout/My Activity/Gemini Apps/MyActivity.json", &gemini),
        ("conversations.json", &chatgpt),
    ];
    // Stored entries put the JSON itself in reach of the mutations; deflated ones the inflater.
    let seeds = vec![
        seed("takeout.zip", fixtures_gen::zip(&entries, false)),
        seed("takeout.zip", fixtures_gen::zip(&entries, true)),
        seed(
            "takeout.zip",
            fixtures_gen::zip(
                &[("Takeout/Chrome/History", &fixture("browser/chrome.sqlite"))],
                true,
            ),
        ),
    ];
    fuzz("takeout_zip", seeds, |work, seed, input| {
        let path = work.join(&seed.name);
        std::fs::write(&path, input).unwrap();
        let scratch = work.join("scratch");
        let found = collect(&[path]);
        for file in &found.files {
            let _ = parse_file_in(file, None, &scratch, &mut |_: Record| Ok(()));
        }
    });
}

#[test]
fn fuzz_doc_html() {
    let seeds = vec![
        seed("page.html", HTML_PAGE),
        seed("takeout.html", fixture(SEARCH_HTML)),
        seed("takeout_de.html", fixture(SEARCH_HTML_DE)),
        seed(
            "legacy.html",
            &b"<html><head><meta charset=\"windows-1252\"><title>caf\xe9</title></head><body>na\xefve</body></html>"[..],
        ),
        seed(
            "utf16.html",
            [0xff, 0xfe]
                .into_iter()
                .chain(HTML_PAGE.encode_utf16().flat_map(u16::to_le_bytes))
                .collect::<Vec<u8>>(),
        ),
        seed("deep.html", deep("<div>", "</div>")),
        seed("long.html", long_string("<html><body><p>", "</p></body></html>")),
    ];
    fuzz("doc_html", seeds, docs(&[DocFormat::Html]));
}

#[test]
fn fuzz_doc_pdf() {
    let seeds = vec![
        seed(
            "report.pdf",
            fixtures_gen::pdf(
                &[fixtures_gen::PDF_PAGE_1, fixtures_gen::PDF_PAGE_2],
                Some("Field Notes on Birds"),
            ),
        ),
        seed(
            "plain.pdf",
            fixtures_gen::pdf(&[fixtures_gen::PDF_PAGE_2], None),
        ),
        seed("compressed.pdf", compressed_pdf()),
    ];
    fuzz("doc_pdf", seeds, docs(&[DocFormat::Pdf]));
}

#[test]
fn fuzz_doc_docx() {
    let paragraphs = [
        "Revenue from the lighthouse tours rose sharply this quarter.",
        "Staff & volunteers repainted the lamp room.",
    ];
    let parts = fixtures_gen::docx_parts("Quarterly Letter", &paragraphs);
    let entries: Vec<(&str, &[u8])> = parts.iter().map(|(n, c)| (*n, c.as_slice())).collect();
    let seeds = vec![
        seed(
            "letter.docx",
            fixtures_gen::docx("Quarterly Letter", &paragraphs),
        ),
        seed("stored.docx", fixtures_gen::zip(&entries, false)),
    ];
    fuzz("doc_docx", seeds, docs(&[DocFormat::Docx]));
}

#[test]
fn fuzz_doc_markdown_text() {
    let mut seeds: Vec<Seed> = ["brewing.md", "notes.md", "storage.md"]
        .iter()
        .map(|n| seed(n, fixture(&format!("desktop-docs/{n}"))))
        .collect();
    seeds.push(seed(
        "garden.md",
        "---\ntags: [front]\n---\n# Tomato Notes\n\nWater *deeply*.\n\n<div>markup</div>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] done\n\nNote[^1].\n\n[^1]: A footnote.\n",
    ));
    seeds.push(seed("deep.md", "> ".repeat(100_000) + "quoted"));
    seeds.push(seed("list.md", deep("- ", "\n")));
    seeds.push(seed("long.md", long_string("# Long\n\n", "\n")));
    fuzz(
        "doc_markdown_text",
        seeds,
        docs(&[DocFormat::Markdown, DocFormat::Text]),
    );
}

// ---------------------------------------------------------------------------------------------
// Regressions: what the fuzzer found, minimised and built in code.

/// Runs `f`, failing if it allocated more than the fuzzer allows for `input_len` bytes or ran
/// longer than `within`.
fn within_limits<T>(input_len: usize, within: Duration, f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let baseline = measure_start();
    let out = f();
    let peak = peak_since(baseline);
    let took = started.elapsed();
    let limit = ALLOC_FACTOR * input_len + ALLOC_FLOOR;
    assert!(peak <= limit, "peak {peak} bytes over the limit {limit}");
    assert!(took <= within, "took {took:?}, over {within:?}");
    out
}

fn text_of(extracted: &rudder::sources::docs::extract::Extracted) -> String {
    extracted
        .sections
        .iter()
        .map(|s| s.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// html5ever scans its stack of open elements on every start tag: 100,000 nested `<div>`s took
/// 100 s and a tree 30× the file. Tags nested past 512 are now dropped before parsing.
#[test]
fn deeply_nested_html_extracts_quickly_and_keeps_its_text() {
    let html = format!(
        "<html><head><title>Deep</title></head><body>{}abyssal marker{}<p>surface</p></body></html>",
        "<div>".repeat(100_000),
        "</div>".repeat(100_000)
    );
    let e = within_limits(html.len(), Duration::from_secs(5), || {
        extract(html.as_bytes(), DocFormat::Html).unwrap()
    });
    assert_eq!(e.title.as_deref(), Some("Deep"));
    let text = text_of(&e);
    assert!(
        text.contains("abyssal marker") && text.contains("surface"),
        "{text}"
    );
}

/// The Takeout importer parses each activity cell with html5ever too.
#[test]
fn a_deeply_nested_takeout_cell_imports_quickly() {
    let cell = |inner: &str| {
        format!(
            r#"<div class="outer-cell mdl-cell"><div class="mdl-grid"><div class="header-cell">Search</div><div class="content-cell">Searched for&nbsp;<a href="https://www.google.com/search?q=deep">deep</a><br>May 1, 2024, 9:00:00 AM UTC{inner}</div></div></div>"#
        )
    };
    let nested = "<div>".repeat(60_000) + "x" + &"</div>".repeat(60_000);
    let html = format!(
        "<html><body><div class=\"mdl-grid\">{}{}</div></body></html>",
        cell(&nested),
        cell("")
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("Search/MyActivity.html");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &html).unwrap();
    let mut sessions = 0;
    within_limits(html.len(), Duration::from_secs(5), || {
        let file = InputFile::plain(&path);
        parse_file_in(
            &file,
            Some(HistoryFormat::TakeoutSearchHtml),
            &dir.path().join("scratch"),
            &mut |r: Record| {
                sessions += usize::from(matches!(r, Record::Entry(_)));
                Ok(())
            },
        )
        .unwrap();
    });
    assert_eq!(sessions, 2);
}

/// pulldown-cmark's tree of `> > > …` was 55× the file, of `<b><i>…` and `[[[…` 50-100×.
#[test]
fn markdown_made_of_markup_stays_within_its_memory_bound() {
    for (source, word) in [
        ("> ".repeat(100_000) + "quoted", "quoted"),
        (
            "- ".repeat(50_000) + "listed\n" + &"\n".repeat(50_000),
            "listed",
        ),
        (
            "<b><i>".repeat(20_000) + "tagged" + &"</i></b>".repeat(20_000),
            "tagged",
        ),
        (
            "[".repeat(20_000) + "bracketed" + &"]\n".repeat(20_000),
            "bracketed",
        ),
        ("*a".repeat(100_000) + " starred", "starred"),
    ] {
        let e = within_limits(source.len(), Duration::from_secs(5), || {
            extract(source.as_bytes(), DocFormat::Markdown).unwrap()
        });
        assert!(text_of(&e).contains(word), "{word} lost");
    }
}

/// A long document of ordinary Markdown is parsed in pieces, and reads the same.
#[test]
fn long_markdown_keeps_its_front_matter_out_and_its_title() {
    let mut source = String::from("---\nsecret: front matter\n---\n# The Title\n\n");
    for i in 0..2_000 {
        source.push_str(&format!(
            "Paragraph {i}, with *emphasis*, a [link](https://example.com/{i}) and `code`.\n\n"
        ));
    }
    source.push_str("```\nfenced\n\n\ncode\n```\nLast words.\n");
    let e = extract(source.as_bytes(), DocFormat::Markdown).unwrap();
    assert_eq!(e.title.as_deref(), Some("The Title"));
    let text = text_of(&e);
    assert!(!text.contains("secret"), "front matter leaked");
    assert!(text.contains("Paragraph 1999, with emphasis, a link and code."));
    assert!(text.contains("fenced\n\n\ncode") && text.contains("Last words."));
    assert!(!text.contains("](") && !text.contains('*'), "markup leaked");
}

/// A small zip whose end record claims 23,901 entries (six bytes inserted after its signature):
/// the zip reader reserved ~200 bytes for each before reading one, 5 MB for a 1 KB file.
fn zip_claiming_too_many_entries() -> Vec<u8> {
    let parts = fixtures_gen::docx_parts("Quarterly Letter", &["Body text."]);
    let entries: Vec<(&str, &[u8])> = parts.iter().map(|(n, c)| (*n, c.as_slice())).collect();
    let mut zip = fixtures_gen::zip(&entries, false);
    let end = zip.windows(4).rposition(|w| w == b"PK\x05\x06").unwrap();
    zip.splice(end + 4..end + 4, *b"]]]]]]");
    zip
}

#[test]
fn a_docx_claiming_more_entries_than_it_can_hold_is_refused_cheaply() {
    let docx = zip_claiming_too_many_entries();
    let err = within_limits(docx.len(), Duration::from_secs(5), || {
        extract(&docx, DocFormat::Docx).unwrap_err()
    });
    assert!(err.message.contains("not a DOCX"), "{err:?}");
}

#[test]
fn a_takeout_zip_claiming_more_entries_than_it_can_hold_is_refused_cheaply() {
    let zip = zip_claiming_too_many_entries();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("takeout.zip");
    std::fs::write(&path, &zip).unwrap();
    let found = within_limits(zip.len(), Duration::from_secs(5), || collect(&[path]));
    assert!(found.files.is_empty());
    let refused = found
        .refused
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>();
    assert!(
        refused.len() == 1 && refused[0].contains("claims more entries"),
        "{refused:?}"
    );
}

/// The harness's own check: SQLite's allocations reach the counting allocator (else a browser
/// database's page cache would go unmeasured).
#[test]
fn sqlite_allocations_are_counted() {
    sqlite_alloc::install();
    let baseline = measure_start();
    let db = rusqlite::Connection::open_in_memory().unwrap();
    db.execute_batch(
        "CREATE TABLE t(x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n \
         WHERE i < 10000) INSERT INTO t SELECT printf('%100d', i) FROM n;",
    )
    .unwrap();
    let peak = peak_since(baseline);
    drop(db);
    assert!(peak > 1 << 20, "only {peak} bytes counted for 1 MB of rows");
}
