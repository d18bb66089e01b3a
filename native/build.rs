//! Stamps the build with a digest of the crate's sources (SOURCE_DIGEST), so that the Python side
//! can tell a core built from older sources (harvestman.model.core) and leave it unused.

use sha1::{Digest, Sha1};
use std::fs;
use std::path::{Path, PathBuf};

/// The files the digest covers, as harvestman.model.core lists them: relative paths, sorted.
fn sources(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ["Cargo.toml", "Cargo.lock", "build.rs"]
        .iter()
        .map(PathBuf::from)
        .collect();
    let mut stack = vec![PathBuf::from("src")];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(root.join(&dir)).expect("src/ is readable") {
            let name = dir.join(entry.expect("a directory entry").file_name());
            if root.join(&name).is_dir() {
                stack.push(name);
            } else if name.extension().is_some_and(|e| e == "rs") {
                files.push(name);
            }
        }
    }
    files.sort_by_key(|p| p.to_string_lossy().replace('\\', "/"));
    files
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let mut hash = Sha1::new();
    for file in sources(&root) {
        let path = file.to_string_lossy().replace('\\', "/");
        hash.update(path.as_bytes());
        hash.update([0]);
        hash.update(fs::read(root.join(&file)).unwrap_or_default());
        hash.update([0]);
        println!("cargo:rerun-if-changed={path}");
    }
    println!("cargo:rerun-if-changed=src");
    let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    println!("cargo:rustc-env=SOURCE_DIGEST={hex}");
}
