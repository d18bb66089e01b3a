//! The gzip members the Rust crates make of the benchmark web's pages, for the choice of the core's
//! compressor (bench/gzip_choice.py runs this beside ISA-L and zlib in Python):
//!
//!     cargo run --release --example gzip_choice --features gzip-choice -- DIR [RUNS]
//!
//! For each crate and level: MB/s of input in CPU time of this thread (best of RUNS), the output's
//! size over the input's, µs a page. One compressor object a run, as a writer would keep one.

use std::io::Write;
use std::path::{Path, PathBuf};

fn thread_cpu_seconds() -> f64 {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: a valid pointer to a timespec-shaped struct; CLOCK_THREAD_CPUTIME_ID is 3 on Linux.
    unsafe { clock_gettime(3, &mut ts) };
    ts.sec as f64 + ts.nsec as f64 * 1e-9
}

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

fn pages(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a readable directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            out.extend(pages(&path));
        } else if path.extension().is_some_and(|e| e == "html") {
            out.push(path);
        }
    }
    out
}

fn gzip(name: &str, level: u32, page: &[u8], ld: &mut libdeflater::Compressor) -> usize {
    match name {
        "flate2 + zlib-rs" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
            e.write_all(page).expect("in memory");
            e.finish().expect("in memory").len()
        }
        "miniz_oxide" => miniz_oxide::deflate::compress_to_vec(page, level as u8).len() + 18,
        _ => {
            let mut out = vec![0; ld.gzip_compress_bound(page.len())];
            ld.gzip_compress(page, &mut out).expect("bound is enough")
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: gzip_choice DIR [RUNS]");
    let runs: usize = args
        .next()
        .map_or(7, |r| r.parse().expect("RUNS: a number"));
    let bodies: Vec<Vec<u8>> = pages(Path::new(&dir))
        .iter()
        .map(|p| std::fs::read(p).expect("readable"))
        .collect();
    let total: usize = bodies.iter().map(Vec::len).sum();
    for level in [1, 3, 6] {
        for name in ["flate2 + zlib-rs", "miniz_oxide", "libdeflater"] {
            let (mut best, mut size) = (f64::MAX, 0);
            for _ in 0..runs {
                let lvl = libdeflater::CompressionLvl::new(level as i32).expect("1-12");
                let mut ld = libdeflater::Compressor::new(lvl);
                let started = thread_cpu_seconds();
                size = bodies.iter().map(|b| gzip(name, level, b, &mut ld)).sum();
                best = best.min(thread_cpu_seconds() - started);
            }
            println!(
                "{name:<18} level {level}: {:6.0} MB/s, ratio {:.3}, {:6.1} µs a page",
                total as f64 / best / 1e6,
                size as f64 / total as f64,
                best * 1e6 / bodies.len() as f64
            );
        }
    }
}
