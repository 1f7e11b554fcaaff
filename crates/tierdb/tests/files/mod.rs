//! Shared by the tests that damage a database's files at rest (`damaged_files`,
//! `missing_or_blank_files`, `nvm_bit_flips`): listing and copying a database's
//! directory, and the damage done to one file. Each test uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Every file under `dir`, sorted.
pub fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() { out.extend(files(&p)) } else { out.push(p) }
    }
    out.sort();
    out
}

/// Copies the directory `from` (recursively) to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// What is done to one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Damage {
    /// The file is removed.
    Delete,
    /// The second half of the file is cut off.
    TruncateHalf,
    /// Every byte becomes zero (the length stays).
    Zero,
    /// The byte at this offset (modulo the length) is flipped by `0x5a`.
    Flip(u64),
}

/// Does `d` to the file `path`.
pub fn damage(path: &Path, d: Damage) {
    let len = std::fs::metadata(path).unwrap().len();
    match d {
        Damage::Delete => std::fs::remove_file(path).unwrap(),
        Damage::TruncateHalf => std::fs::OpenOptions::new().write(true).open(path).unwrap().set_len(len / 2).unwrap(),
        Damage::Zero => std::fs::write(path, vec![0u8; len as usize]).unwrap(),
        Damage::Flip(at) => {
            let mut b = std::fs::read(path).unwrap();
            let at = (at % len) as usize;
            b[at] ^= 0x5a;
            std::fs::write(path, b).unwrap();
        }
    }
}
