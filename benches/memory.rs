//! Memory of compiling: bytes per node of a long chain.
//!
//! Generates the chain of the `run` bench (`compute n{i} = n{i-1} + 1`)
//! with 1,000,000 nodes and a 1,000-node chain as the baseline, then:
//!
//! - per phase, in this process, with a counting allocator: the bytes
//!   held after loading (source text and syntax trees), the peak while
//!   lowering (which consumes the syntax trees), and the bytes held by
//!   the checked program alone;
//! - end to end, the peak resident size of the release binary's
//!   `ignite check FILE` and `ignite run FILE --input x=1`, the peak of
//!   a 1,000-node chain subtracted, divided by the nodes added;
//! - the peak of `ignite run --inputs FILE` of about 100 MB of small
//!   objects, against the file's size.
//!
//! Run with `cargo build --release && cargo bench --bench memory`. The
//! targets: `check` at most 300 bytes per node, `run` at most 200; the
//! inputs under 3× the file.

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod binary;
mod peak;

use std::alloc::{GlobalAlloc, Layout};
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// mimalloc, as the `ignite` binary uses, counting the bytes asked for.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to mimalloc with the same arguments;
// the counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let held = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(held, Ordering::Relaxed);
        // SAFETY: the caller's layout, unchanged.
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= layout.size() {
            let held = HELD.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size
                - layout.size();
            PEAK.fetch_max(held, Ordering::Relaxed);
        } else {
            HELD.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        // SAFETY: the caller's pointer, layout and size, unchanged.
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const NODES: usize = 1_000_000;

/// The chain the peaks per node are measured above.
const BASE_NODES: usize = 1_000;

/// Objects in the inputs file (about 100 MB).
const ROWS: usize = 2_000_000;

fn main() {
    // The binary first: a child's peak resident size starts from this
    // process's own at the time it is started.
    let binary = binary::release_binary();
    let dir = std::env::temp_dir().join(format!("ignite-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (small, big) = (dir.join("base.ign"), dir.join("chain.ign"));
    write_chain(&small, BASE_NODES);
    write_chain(&big, NODES);
    println!("| command | peak RSS, {BASE_NODES} nodes | peak RSS, {NODES} nodes | per node |");
    println!("| --- | ---: | ---: | ---: |");
    for (name, args) in [("check", &["check"][..]), ("run", &["run", "--input", "x=1"][..])] {
        let base = peak::peak_rss(&binary, args, &small);
        let peak = peak::peak_rss(&binary, args, &big);
        println!(
            "| `ignite {name}` | {:.1} MB | {:.1} MB | **{:.0} B** |",
            mb(base),
            mb(peak),
            per_node(peak.saturating_sub(base))
        );
    }
    inputs(&binary, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    println!();
    // Lowering recurses per expression level: a big stack, as `compile`.
    igniter::on_big_stack(phases);
}

/// The peak of `ignite run --inputs` of a file of `ROWS` small objects,
/// against the file's size (the input read, and not read).
fn inputs(binary: &Path, dir: &Path) {
    let json = dir.join("rows.json");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&json).unwrap());
    write!(file, "{{\"rows\": [").unwrap();
    for i in 0..ROWS {
        let comma = if i + 1 < ROWS { "," } else { "" };
        write!(file, "{{\"id\": {i}, \"name\": \"row {i}\", \"ok\": true}}{comma}").unwrap();
    }
    writeln!(file, "]}}").unwrap();
    file.flush().unwrap();
    drop(file);
    let size = std::fs::metadata(&json).unwrap().len();
    let json = json.to_str().unwrap();
    println!();
    println!(
        "| `ignite run --inputs` ({ROWS} objects, {:.1} MB) | peak RSS | × the file |",
        mb(size as usize)
    );
    println!("| --- | ---: | ---: |");
    for (name, body) in [("read (`len(rows)`)", "len(rows)"), ("not read", "1")] {
        let contract = dir.join("rows.ign");
        std::fs::write(
            &contract,
            format!(
                "contract Rows {{\n  input rows: array\n  compute n = {body}\n  output n\n}}\n"
            ),
        )
        .unwrap();
        let peak = peak::peak_rss(binary, &["run", "--inputs", json], &contract);
        #[allow(clippy::cast_precision_loss)]
        let ratio = peak as f64 / size as f64;
        println!("| {name} | {:.1} MB | **{ratio:.2}×** |", mb(peak));
    }
}

/// Bytes asked of the allocator per phase of compiling the chain.
fn phases() {
    let text = chain(NODES);
    let start = HELD.load(Ordering::Relaxed);
    PEAK.store(start, Ordering::Relaxed);
    let loaded = igniter::load::load_source("chain.ign", &text);
    let after_load = HELD.load(Ordering::Relaxed) - start;
    let load_peak = PEAK.load(Ordering::Relaxed) - start;
    assert!(!loaded.diagnostics.has_errors(), "the chain parses");
    // Lowering consumes the syntax trees.
    let (program, diagnostics) = igniter::lower::lower(&loaded.sources, loaded.files, None);
    let lower_peak = PEAK.load(Ordering::Relaxed) - start;
    assert!(diagnostics.is_empty(), "the chain checks cleanly");
    drop(loaded.sources);
    let program_only = HELD.load(Ordering::Relaxed) - start;
    drop(program);
    let source = text.len();
    println!("Bytes asked of the allocator, {NODES}-node chain ({source} bytes of source):");
    println!();
    println!("| phase | bytes | per node |");
    println!("| --- | ---: | ---: |");
    let mut rows = String::new();
    for (phase, bytes) in [
        ("held after loading (a copy of the source, the syntax trees)", after_load),
        ("peak while loading", load_peak),
        ("peak while lowering (syntax trees, checked program, graph)", lower_peak),
        ("held by the checked program (its copy of the source included)", program_only),
    ] {
        let _ = writeln!(rows, "| {phase} | {:.1} MB | {:.0} B |", mb(bytes), per_node(bytes));
    }
    print!("{rows}");
}

/// The chain of the `run` bench with `nodes` nodes.
fn chain(nodes: usize) -> String {
    let mut text = Vec::new();
    write_nodes(&mut text, nodes).unwrap();
    String::from_utf8(text).unwrap()
}

/// Writes the chain to `path` without holding it in memory.
fn write_chain(path: &Path, nodes: usize) {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    write_nodes(&mut file, nodes).unwrap();
    file.flush().unwrap();
}

fn write_nodes(out: &mut impl Write, nodes: usize) -> std::io::Result<()> {
    write!(out, "contract Chain {{\n  input x: integer\n  compute n0 = x + 1\n")?;
    for i in 1..nodes {
        writeln!(out, "  compute n{i} = n{} + 1", i - 1)?;
    }
    writeln!(out, "  output n{}\n}}", nodes - 1)
}

#[allow(clippy::cast_precision_loss)]
fn mb(bytes: usize) -> f64 {
    bytes as f64 / 1e6
}

#[allow(clippy::cast_precision_loss)]
fn per_node(bytes: usize) -> f64 {
    bytes as f64 / (NODES - BASE_NODES) as f64
}
