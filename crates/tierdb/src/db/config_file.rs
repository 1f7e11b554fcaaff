//! Configuration files: a [`DbConfig`] as TOML a person writes by hand (`docs/config.md`).
//!
//! The file is read into [`FileForm`] (kebab-case keys, every table closed to unknown
//! keys), then built the way code builds a configuration: an [`ArchConfig`] from the
//! architecture's keys, [`DbConfig::for_arch`] over it, then the database's own keys
//! (durability, isolation, log, checkpoints). Without `architecture` the base is
//! [`DbConfig::new`]. Saving runs the other way and checks its work: the form written is
//! built again and compared with the configuration, field by field, so a field the file
//! cannot express is an error that names it, never a silent loss.
//!
//! Errors name the file, the key as a dotted path and its line: toml reports a byte span,
//! and the span is looked up in the document's spanned tables ([`key_at`]).

use std::fs;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::config::{CheckpointConfig, DbConfig, DbError, Isolation};
use crate::arch::{ArchConfig, Architecture};
use crate::buffer::Techniques;
use crate::device::{DeviceProfile, DirectIo, DoubleWriteMode, EmulationMode, NvmConfig, Tier};
use crate::limits::{PAGE_SIZE_MAX_BYTES, PAGE_SIZE_MIN_BYTES};
use crate::page::NvmVerify;
use crate::policy::{NvcacheConfig, ObpCount, ObpMode};
use crate::wal::{Durability, LogBuffer};
use crate::{ByteSize, Result};

/// DRAM of a file that does not give `dram.size`: as [`DbConfig::new`].
pub(crate) const DRAM_BYTES_DEFAULT: u64 = 64 << 20;

/// Size of an NVM log ring whose file does not give `log.ring.size`.
pub(crate) const LOG_RING_BYTES_DEFAULT: u64 = 16 << 20;

/// The NVM pool's file in the database directory when `nvm.path` is not given.
pub(crate) const NVM_POOL_FILE: &str = "pool.nvm";

/// The NVM log ring's file in the database directory when `log.ring.path` is not given.
pub(crate) const LOG_RING_FILE: &str = "wal.nvm";

/// Most bytes of a configuration file read (a bound on a mistaken path).
pub(crate) const CONFIG_FILE_BYTES_MAX: u64 = 1 << 20;

/// The file's top level. `dir` is the one required key.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct FileForm {
    dir: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    architecture: Option<Architecture>,
    #[serde(skip_serializing_if = "Option::is_none")]
    page_size: Option<ByteSize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    emulation: Option<EmulationMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    techniques: Option<TechniquesForm>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu_cache_model: Option<Bytes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prefetch_lines: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    debug_lines: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    durability: Option<Durability>,
    #[serde(skip_serializing_if = "Option::is_none")]
    isolation: Option<Isolation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version_bytes_max: Option<Bytes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dram: Option<DramForm>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nvm: Option<NvmForm>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ssd: Option<SsdForm>,
    #[serde(skip_serializing_if = "Option::is_none")]
    policy: Option<PolicyForm>,
    #[serde(skip_serializing_if = "Option::is_none")]
    log: Option<LogForm>,
    #[serde(skip_serializing_if = "Option::is_none")]
    checkpoint: Option<CheckpointForm>,
}

/// `[dram]`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct DramForm {
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<ByteSize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<Profile>,
}

/// `[nvm]`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct NvmForm {
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<Bytes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<Profile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    verify: Option<NvmVerify>,
    #[serde(skip_serializing_if = "Option::is_none")]
    wear_counters: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    double_write_slots: Option<usize>,
}

/// `[ssd]`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct SsdForm {
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<Profile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    direct_io: Option<DirectIo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    double_write: Option<DoubleWriteMode>,
}

/// `[policy]`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct PolicyForm {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    admission_set_pages: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nvcache: Option<NvcacheForm>,
}

/// `[policy.nvcache]`: [`NvcacheConfig`] in kebab-case.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct NvcacheForm {
    #[serde(skip_serializing_if = "Option::is_none")]
    obp_mode: Option<ObpMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    obp_target_permille: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    obp_window_lookups: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    small_bypass_dram_percent: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reuse_window_lookups: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    obp_count: Option<ObpCount>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stale_overwrite_hits_min: Option<u64>,
}

/// Where the log buffer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum LogBufferKind {
    Dram,
    Nvm,
}

/// `[log]`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct LogForm {
    #[serde(skip_serializing_if = "Option::is_none")]
    buffer: Option<LogBufferKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    buffer_size: Option<ByteSize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flush_interval_us: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    segment_size: Option<ByteSize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<Profile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ring: Option<RingForm>,
}

/// `[log.ring]`: the NVM ring of `log.buffer = "nvm"`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RingForm {
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<ByteSize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<Profile>,
}

/// `[checkpoint]`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct CheckpointForm {
    #[serde(skip_serializing_if = "Option::is_none")]
    enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    log_bytes: Option<Bytes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    interval_ms: Option<u64>,
}

/// A byte count that may be 0: a size string (`"64MiB"`) or an integer of bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Bytes(u64);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        if self.0 == 0 { s.serialize_u64(0) } else { s.collect_str(&ByteSize(self.0)) }
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Bytes, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Bytes;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a size such as \"64MiB\", or a number of bytes")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> std::result::Result<Bytes, E> {
                Ok(Bytes(n))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> std::result::Result<Bytes, E> {
                u64::try_from(n).map(Bytes).map_err(|_| E::custom(format!("{n} bytes: sizes are not negative")))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<Bytes, E> {
                s.parse::<ByteSize>().map(|b| Bytes(b.bytes())).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// Techniques as their name (`"all"`, `"none"`, `"cl,mini"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TechniquesForm(Techniques);

impl Serialize for TechniquesForm {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for TechniquesForm {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<TechniquesForm, D::Error> {
        let s = String::deserialize(d)?;
        Techniques::parse(&s).map(TechniquesForm).map_err(de::Error::custom)
    }
}

/// A device profile: a preset's name or a profile file's path (as `--nvm-profile`
/// takes them; a relative path is from the working directory), or the profile's fields
/// inline. Written back as its name when it is that preset, inline otherwise.
#[derive(Clone, Debug, PartialEq)]
struct Profile(DeviceProfile);

impl Serialize for Profile {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match DeviceProfile::preset(&self.0.name) {
            Ok(p) if p == self.0 => s.serialize_str(&self.0.name),
            _ => self.0.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Profile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Profile, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Profile;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a profile's name, a path to a profile file, or a table of the profile's fields")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<Profile, E> {
                DeviceProfile::load(s).map(Profile).map_err(E::custom)
            }
            fn visit_map<M: MapAccess<'de>>(self, map: M) -> std::result::Result<Profile, M::Error> {
                let p = DeviceProfile::deserialize(de::value::MapAccessDeserializer::new(map))?;
                p.validate("the inline profile").map_err(de::Error::custom)?;
                Ok(Profile(p))
            }
        }
        d.deserialize_any(V)
    }
}

/// What is wrong, and at which key (dotted) of the file.
struct Fail {
    key: Option<String>,
    what: String,
}

fn fail(key: &str, what: impl Into<String>) -> Fail {
    Fail { key: Some(key.to_string()), what: what.into() }
}

/// Reads and builds the file at `path`.
pub(super) fn load(path: &Path) -> Result<DbConfig> {
    let file = path.display().to_string();
    let io = |what: String| DbError::ConfigFile { file: file.clone(), key: None, line: None, what };
    let len = fs::metadata(path).map_err(|e| io(format!("cannot read it: {e}")))?.len();
    if len > CONFIG_FILE_BYTES_MAX {
        return Err(
            io(format!("{len} bytes: larger than a configuration file can be ({CONFIG_FILE_BYTES_MAX})")).into()
        );
    }
    let text = fs::read_to_string(path).map_err(|e| io(format!("cannot read it: {e}")))?;
    parse(&text, &file)
}

/// Parses and builds the text of a configuration file named `source` in errors.
pub(super) fn parse(text: &str, source: &str) -> Result<DbConfig> {
    let form: FileForm = toml::from_str(text).map_err(|e| {
        let span = e.span();
        let key = span.clone().and_then(|s| key_at(text, s));
        DbError::ConfigFile {
            file: source.to_string(),
            key,
            line: span.map(|s| line_of(text, s.start)),
            what: e.message().trim().to_string(),
        }
    })?;
    build(&form).map_err(|f| {
        let line = f.key.as_deref().and_then(|k| span_of_key(text, k)).map(|s| line_of(text, s.start));
        DbError::ConfigFile { file: source.to_string(), key: f.key, line, what: f.what }.into()
    })
}

/// The configuration as file text, checked to build back into an equal configuration.
pub(super) fn print(cfg: &DbConfig) -> Result<String> {
    let form = form_of(cfg);
    let back = build(&form).map_err(|f| DbError::Config {
        what: format!(
            "the configuration does not build back from its own file ({}{}); it was built in code in a way a \
             file cannot express",
            f.key.map(|k| format!("key {k}: ")).unwrap_or_default(),
            f.what
        ),
    })?;
    let differ = differences(cfg, &back);
    if !differ.is_empty() {
        return Err(DbError::Config {
            what: format!(
                "a configuration file cannot express {} as set (changed in code after the configuration was \
                 built; build it from an ArchConfig with the value instead, or leave it as built)",
                differ.join(", ")
            ),
        }
        .into());
    }
    toml::to_string(&form).map_err(|e| DbError::Config { what: format!("printing the configuration: {e}") }.into())
}

/// Writes the file: a temporary file beside `path`, synced, renamed over it.
pub(super) fn save(cfg: &DbConfig, path: &Path) -> Result<()> {
    let text = print(cfg)?;
    let file = path.display().to_string();
    let io = |what: String| DbError::ConfigFile { file: file.clone(), key: None, line: None, what };
    let name = path.file_name().ok_or_else(|| io("not a file name".into()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let written = write_synced(&tmp, &text).and_then(|()| fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io(format!("cannot write it (through {}): {e}", tmp.display())).into());
    }
    Ok(())
}

/// Writes `text` to a new file at `path` and syncs it.
fn write_synced(path: &Path, text: &str) -> std::io::Result<()> {
    let mut f = fs::File::create(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

/// Builds the configuration a file describes.
fn build(form: &FileForm) -> std::result::Result<DbConfig, Fail> {
    let dir = &form.dir;
    if dir.as_os_str().is_empty() {
        return Err(fail("dir", "must not be empty"));
    }
    if let Some(ps) = form.page_size {
        let ok = usize::try_from(ps.bytes())
            .is_ok_and(|b| b.is_power_of_two() && (PAGE_SIZE_MIN_BYTES..=PAGE_SIZE_MAX_BYTES).contains(&b));
        if !ok {
            return Err(fail(
                "page-size",
                format!(
                    "{ps}: a power of two from {} to {}",
                    ByteSize(PAGE_SIZE_MIN_BYTES as u64),
                    ByteSize(PAGE_SIZE_MAX_BYTES as u64)
                ),
            ));
        }
    }
    let dram = form.dram.as_ref();
    let dram_size = dram.and_then(|d| d.size).unwrap_or(ByteSize(DRAM_BYTES_DEFAULT));
    let mut cfg = match form.architecture {
        None => {
            refuse_without_architecture(form)?;
            let mut cfg = DbConfig::new(dir);
            if let Some(ps) = form.page_size {
                cfg.buffer.page_size = ps.bytes() as usize;
                cfg.buffer.dram.frame_bytes = ps.bytes() as usize;
            }
            cfg.buffer.dram.size = dram_size;
            cfg
        }
        Some(arch) => DbConfig::for_arch(&arch_config(form, arch, dram_size)?, dir)
            .map_err(|e| fail("architecture", format!("{arch}: {e}")))?,
    };
    if let Some(d) = form.durability {
        cfg.durability = d;
    }
    if let Some(i) = form.isolation {
        cfg.isolation = i;
    }
    if let Some(v) = form.version_bytes_max {
        cfg.version_bytes_max = v.0;
    }
    if let Some(c) = &form.checkpoint {
        let d = CheckpointConfig::default();
        cfg.checkpoint = CheckpointConfig {
            enabled: c.enabled.unwrap_or(d.enabled),
            log_bytes: c.log_bytes.map_or(d.log_bytes, |b| b.0),
            interval_ms: c.interval_ms.unwrap_or(d.interval_ms),
        };
    }
    if let Some(log) = &form.log {
        apply_log(&mut cfg, log)?;
    }
    Ok(cfg)
}

/// Without `architecture` the base is [`DbConfig::new`]: the architecture's keys have
/// nothing to apply to.
fn refuse_without_architecture(form: &FileForm) -> std::result::Result<(), Fail> {
    let given = [
        ("emulation", form.emulation.is_some()),
        ("techniques", form.techniques.is_some()),
        ("cpu-cache-model", form.cpu_cache_model.is_some()),
        ("prefetch-lines", form.prefetch_lines.is_some()),
        ("debug-lines", form.debug_lines.is_some()),
        ("dram.profile", form.dram.as_ref().is_some_and(|d| d.profile.is_some())),
        ("nvm", form.nvm.is_some()),
        ("ssd", form.ssd.is_some()),
        ("policy", form.policy.is_some()),
    ];
    match given.iter().find(|(_, g)| *g) {
        Some((key, _)) => Err(fail(
            key,
            "needs `architecture` (without it the database is a DRAM buffer over its page file, DbConfig::new, \
             whose only keys of this kind are page-size and dram.size)",
        )),
        None => Ok(()),
    }
}

/// The [`ArchConfig`] of the file's architecture keys.
fn arch_config(form: &FileForm, arch: Architecture, dram: ByteSize) -> std::result::Result<ArchConfig, Fail> {
    let nvm = form.nvm.as_ref();
    let nvm_size = match nvm.and_then(|n| n.size) {
        Some(Bytes(0)) if arch.uses_nvm() => return Err(fail("nvm.size", format!("{arch} needs NVM: not 0"))),
        Some(b) => ByteSize(b.0),
        None if arch.uses_nvm() => {
            return Err(fail("nvm.size", format!("required: {arch} keeps pages in NVM and has no default size")));
        }
        None => ByteSize(0),
    };
    let mut a = ArchConfig::new(arch, dram, nvm_size, "db", &form.dir)
        .map_err(|e| fail("architecture", format!("{arch}: {e}")))?;
    a.nvm_path = nvm.and_then(|n| n.path.clone()).unwrap_or_else(|| form.dir.join(NVM_POOL_FILE));
    if let Some(ps) = form.page_size {
        a.page_size = ps.bytes() as usize;
    }
    if let Some(m) = form.emulation {
        a.mode = m;
    }
    if let Some(t) = form.techniques {
        a.techniques = Some(t.0);
    }
    if let Some(c) = form.cpu_cache_model {
        a.cpu_cache_model = ByteSize(c.0);
    }
    if let Some(p) = form.prefetch_lines {
        a.prefetch_lines = p;
    }
    if let Some(d) = form.debug_lines {
        a.debug_lines = d;
    }
    if let Some(p) = form.dram.as_ref().and_then(|d| d.profile.as_ref()) {
        a.dram_profile = profile_for(&p.0, Tier::Dram, "dram.profile")?;
    }
    if let Some(n) = nvm {
        if let Some(p) = &n.profile {
            a.nvm_profile = profile_for(&p.0, Tier::Nvm, "nvm.profile")?;
        }
        if let Some(v) = n.verify {
            a.nvm_verify = v;
        }
        if let Some(w) = n.wear_counters {
            a.wear_counters = w;
        }
        if let Some(s) = n.double_write_slots {
            a.nvm_double_write_slots = s;
        }
    }
    if let Some(s) = &form.ssd {
        if let Some(p) = &s.profile {
            a.ssd_profile = profile_for(&p.0, Tier::Ssd, "ssd.profile")?;
        }
        if let Some(d) = s.direct_io {
            a.direct_io = d;
        }
        if let Some(d) = s.double_write {
            a.double_write = d;
        }
    }
    if let Some(p) = &form.policy {
        a.policy = p.name.clone();
        a.admission_set_pages = p.admission_set_pages;
        if let Some(s) = p.seed {
            a.policy_seed = s;
        }
        if let Some(n) = &p.nvcache {
            let d = NvcacheConfig::default();
            a.nvcache = NvcacheConfig {
                obp_mode: n.obp_mode.unwrap_or(d.obp_mode),
                obp_target_permille: n.obp_target_permille.unwrap_or(d.obp_target_permille),
                obp_window_lookups: n.obp_window_lookups.unwrap_or(d.obp_window_lookups),
                small_bypass_dram_percent: n.small_bypass_dram_percent.unwrap_or(d.small_bypass_dram_percent),
                reuse_window_lookups: n.reuse_window_lookups.or(d.reuse_window_lookups),
                obp_count: n.obp_count.unwrap_or(d.obp_count),
                stale_overwrite_hits_min: n.stale_overwrite_hits_min.or(d.stale_overwrite_hits_min),
            };
        }
    }
    if let Some(name) = &a.policy {
        // Built once to check the name and its knobs; the buffer manager builds its own.
        crate::policy::by_name(name, a.admission_set_pages.unwrap_or(1), &a.nvcache, a.policy_seed)
            .map_err(|e| fail("policy.name", e.to_string()))?;
    }
    Ok(a)
}

/// The profile, if it serves `tier`.
fn profile_for(p: &DeviceProfile, tier: Tier, key: &str) -> std::result::Result<DeviceProfile, Fail> {
    p.expect_tier(tier).map_err(|e| fail(key, e.to_string()))?;
    Ok(p.clone())
}

/// `[log]` over the configuration built so far.
fn apply_log(cfg: &mut DbConfig, log: &LogForm) -> std::result::Result<(), Fail> {
    if let Some(b) = log.buffer_size {
        cfg.wal.buffer_bytes =
            usize::try_from(b.bytes()).map_err(|_| fail("log.buffer-size", format!("{b}: too large")))?;
    }
    if let Some(us) = log.flush_interval_us {
        cfg.wal.flush_interval = Duration::from_micros(us);
    }
    if let Some(s) = log.segment_size {
        cfg.wal.file.segment_bytes = s.bytes();
    }
    if let Some(p) = &log.profile {
        cfg.wal.file.profile = p.0.clone();
    }
    match (log.buffer.unwrap_or(LogBufferKind::Dram), &log.ring) {
        (LogBufferKind::Dram, None) => cfg.wal.buffer = LogBuffer::Dram,
        (LogBufferKind::Dram, Some(_)) => {
            return Err(fail("log.ring", "an NVM log ring needs log.buffer = \"nvm\""));
        }
        (LogBufferKind::Nvm, ring) => {
            let ring = ring.as_ref();
            let path = ring.and_then(|r| r.path.clone()).unwrap_or_else(|| cfg.dir.join(LOG_RING_FILE));
            let size = ring.and_then(|r| r.size).unwrap_or(ByteSize(LOG_RING_BYTES_DEFAULT));
            let mut n = NvmConfig::new(path, size);
            n.profile = match ring.and_then(|r| r.profile.as_ref()) {
                Some(p) => profile_for(&p.0, Tier::Nvm, "log.ring.profile")?,
                None => match &cfg.arch {
                    Some(a) => a.nvm_profile.clone(),
                    None => {
                        DeviceProfile::preset("optane-dcpmm").map_err(|e| fail("log.ring.profile", e.to_string()))?
                    }
                },
            };
            n.mode = cfg.arch.as_ref().map_or(EmulationMode::Off, |a| a.mode);
            cfg.wal.buffer = LogBuffer::Nvm(n);
        }
    }
    Ok(())
}

/// The file that describes `cfg` (every key written).
fn form_of(cfg: &DbConfig) -> FileForm {
    let mut f = FileForm {
        dir: cfg.dir.clone(),
        architecture: cfg.architecture(),
        page_size: Some(ByteSize(cfg.buffer.page_size as u64)),
        emulation: None,
        techniques: None,
        cpu_cache_model: None,
        prefetch_lines: None,
        debug_lines: None,
        durability: Some(cfg.durability),
        isolation: Some(cfg.isolation),
        version_bytes_max: Some(Bytes(cfg.version_bytes_max)),
        dram: Some(DramForm { size: Some(cfg.buffer.dram.size), profile: None }),
        nvm: None,
        ssd: None,
        policy: None,
        log: None,
        checkpoint: Some(CheckpointForm {
            enabled: Some(cfg.checkpoint.enabled),
            log_bytes: Some(Bytes(cfg.checkpoint.log_bytes)),
            interval_ms: Some(cfg.checkpoint.interval_ms),
        }),
    };
    if let Some(a) = &cfg.arch {
        f.page_size = Some(ByteSize(a.page_size as u64));
        f.emulation = Some(a.mode);
        f.techniques = a.techniques.map(TechniquesForm);
        f.cpu_cache_model = Some(Bytes(a.cpu_cache_model.bytes()));
        f.prefetch_lines = Some(a.prefetch_lines);
        f.debug_lines = Some(a.debug_lines);
        f.dram = Some(DramForm { size: Some(a.dram), profile: Some(Profile(a.dram_profile.clone())) });
        f.nvm = Some(NvmForm {
            size: Some(Bytes(a.nvm.bytes())),
            path: Some(a.nvm_path.clone()),
            profile: Some(Profile(a.nvm_profile.clone())),
            verify: Some(a.nvm_verify),
            wear_counters: Some(a.wear_counters),
            double_write_slots: Some(a.nvm_double_write_slots),
        });
        f.ssd = Some(SsdForm {
            profile: Some(Profile(a.ssd_profile.clone())),
            direct_io: Some(a.direct_io),
            double_write: Some(a.double_write),
        });
        let n = &a.nvcache;
        f.policy = Some(PolicyForm {
            name: a.policy.clone(),
            admission_set_pages: a.admission_set_pages,
            seed: Some(a.policy_seed),
            nvcache: Some(NvcacheForm {
                obp_mode: Some(n.obp_mode),
                obp_target_permille: Some(n.obp_target_permille),
                obp_window_lookups: Some(n.obp_window_lookups),
                small_bypass_dram_percent: Some(n.small_bypass_dram_percent),
                reuse_window_lookups: n.reuse_window_lookups,
                obp_count: Some(n.obp_count),
                stale_overwrite_hits_min: n.stale_overwrite_hits_min,
            }),
        });
    }
    let w = &cfg.wal;
    let (buffer, ring) = match &w.buffer {
        LogBuffer::Dram => (LogBufferKind::Dram, None),
        LogBuffer::Nvm(n) => (
            LogBufferKind::Nvm,
            Some(RingForm {
                path: Some(n.path.clone()),
                size: Some(n.size),
                profile: Some(Profile(n.profile.clone())),
            }),
        ),
    };
    f.log = Some(LogForm {
        buffer: Some(buffer),
        buffer_size: Some(ByteSize(w.buffer_bytes as u64)),
        flush_interval_us: Some(u64::try_from(w.flush_interval.as_micros()).unwrap_or(u64::MAX)),
        segment_size: Some(ByteSize(w.file.segment_bytes)),
        profile: Some(Profile(w.file.profile.clone())),
        ring,
    });
    f
}

/// The fields of `a` that differ from `b`'s, by name (`buffer.policy`, `wal.faults`).
fn differences(a: &DbConfig, b: &DbConfig) -> Vec<String> {
    // Destructured in full: a field added to DbConfig must be placed here (and in the
    // file, or it is reported as one a file cannot express).
    let DbConfig {
        dir,
        buffer,
        wal,
        durability,
        pages_in_nvm,
        redo_from_retained,
        isolation,
        checkpoint,
        version_bytes_max,
        arch,
    } = a;
    let mut out = Vec::new();
    let mut check = |name: &str, same: bool| {
        if !same {
            out.push(name.to_string());
        }
    };
    check("dir", *dir == b.dir);
    check("durability", *durability == b.durability);
    check("pages_in_nvm", *pages_in_nvm == b.pages_in_nvm);
    check("redo_from_retained", *redo_from_retained == b.redo_from_retained);
    check("isolation", *isolation == b.isolation);
    check("checkpoint", *checkpoint == b.checkpoint);
    check("version_bytes_max", *version_bytes_max == b.version_bytes_max);
    check("arch", *arch == b.arch);
    let (x, y) = (buffer, &b.buffer);
    check("buffer.page_size", x.page_size == y.page_size);
    check("buffer.dram", x.dram == y.dram);
    check("buffer.nvm", x.nvm == y.nvm);
    check("buffer.ssd", x.ssd == y.ssd);
    check("buffer.ssd_open_mode", x.ssd_open_mode == y.ssd_open_mode);
    check("buffer.policy", x.policy == y.policy);
    check("buffer.admission_set_pages", x.admission_set_pages == y.admission_set_pages);
    check("buffer.policy_seed", x.policy_seed == y.policy_seed);
    check("buffer.cpu_cache_model_bytes", x.cpu_cache_model_bytes == y.cpu_cache_model_bytes);
    check("buffer.prefetch_lines", x.prefetch_lines == y.prefetch_lines);
    check("buffer.nvcache", x.nvcache == y.nvcache);
    check("buffer.nvm_verify", x.nvm_verify == y.nvm_verify);
    check("buffer.max_pages", x.max_pages == y.max_pages);
    check("buffer.techniques", x.techniques == y.techniques);
    check("buffer.debug_lines", x.debug_lines == y.debug_lines);
    check("buffer.reuse_nvm", x.reuse_nvm == y.reuse_nvm);
    check("buffer.reopen_nvm_only", x.reopen_nvm_only == y.reopen_nvm_only);
    check("buffer.double_write", x.double_write == y.double_write);
    check("buffer.nvm_file_io", x.nvm_file_io == y.nvm_file_io);
    check("buffer.evict_batch", x.evict_batch == y.evict_batch);
    check("buffer (another field)", x == y);
    let (x, y) = (wal, &b.wal);
    check("wal.file", x.file == y.file);
    check("wal.buffer", x.buffer == y.buffer);
    check("wal.buffer_bytes", x.buffer_bytes == y.buffer_bytes);
    check("wal.flush_interval", x.flush_interval == y.flush_interval);
    check("wal.valid_past", x.valid_past == y.valid_past);
    check("wal.salvage_damaged_log", x.salvage_damaged_log == y.salvage_damaged_log);
    check("wal.ring_init", x.ring_init == y.ring_init);
    // The named fields say which; the catch-alls only speak when none did.
    if out.iter().filter(|n| n.contains("another")).count() < out.len() {
        out.retain(|n| !n.contains("another"));
    }
    out
}

/// Line (from 1) of byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// The dotted key whose name or value holds `span`, innermost first.
fn key_at(text: &str, span: Range<usize>) -> Option<String> {
    let doc = toml::de::DeTable::parse(text).ok()?;
    let mut path = Vec::new();
    walk(doc.get_ref(), &span, &mut path);
    (!path.is_empty()).then(|| path.join("."))
}

/// Pushes onto `path` the keys down to the one that holds `span`.
fn walk(table: &toml::de::DeTable<'_>, span: &Range<usize>, path: &mut Vec<String>) {
    let inside = |outer: Range<usize>| outer.start <= span.start && span.end <= outer.end.max(outer.start + 1);
    for (k, v) in table {
        if inside(k.span()) {
            path.push(k.get_ref().to_string());
            return;
        }
        if inside(v.span()) {
            path.push(k.get_ref().to_string());
            if let Some(t) = v.get_ref().as_table() {
                walk(t, span, path);
            }
            return;
        }
    }
    // Tables opened by a header (`[checkpoint]`) span only their header: find the one
    // whose keys hold the span.
    for (k, v) in table {
        if let Some(t) = v.get_ref().as_table() {
            let mut sub = Vec::new();
            walk(t, span, &mut sub);
            if !sub.is_empty() {
                path.push(k.get_ref().to_string());
                path.extend(sub);
                return;
            }
        }
    }
}

/// The span of the dotted key's name in the document, if it is there (the nearest
/// table above it otherwise).
fn span_of_key(text: &str, key: &str) -> Option<Range<usize>> {
    let doc = toml::de::DeTable::parse(text).ok()?;
    let mut table = doc.get_ref();
    let mut found = None;
    for part in key.split('.') {
        let (k, v) = table.iter().find(|(k, _)| k.get_ref() == part)?;
        found = Some(k.span());
        match v.get_ref().as_table() {
            Some(t) => table = t,
            None => break,
        }
    }
    found
}

/// `dir/wal`: where [`DbConfig`] keeps the log (for the tests' expectations).
#[cfg(test)]
fn log_dir(dir: &Path) -> PathBuf {
    dir.join(super::config::LOG_DIR)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("tierdb-config-file-{name}-{}", std::process::id()));
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn arch(a: Architecture, dir: &Path) -> ArchConfig {
        let mut c = ArchConfig::new(a, ByteSize(8 << 20), ByteSize(32 << 20), "cf", dir).unwrap();
        c.nvm_path = dir.join("cf.nvm");
        c.page_size = 4096;
        c
    }

    fn round_trip(cfg: &DbConfig) -> DbConfig {
        let text = cfg.to_toml_string().unwrap_or_else(|e| panic!("{:?}: {e}", cfg.architecture()));
        DbConfig::from_toml_str(&text, "round-trip.toml").unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    fn err(text: &str) -> String {
        DbConfig::from_toml_str(text, "bad.toml").expect_err("refused").to_string()
    }

    #[test]
    fn new_and_every_architecture_round_trip() {
        let dir = scratch("round-trip");
        let cfg = DbConfig::new(dir.join("db"));
        assert_eq!(round_trip(&cfg), cfg);
        for a in Architecture::ALL {
            let mut cfg = DbConfig::for_arch(&arch(a, &dir), dir.join("db")).unwrap();
            cfg.durability = Durability::Group;
            cfg.isolation = Isolation::ReadCommitted;
            cfg.checkpoint = CheckpointConfig { enabled: true, log_bytes: 0, interval_ms: 5 };
            cfg.version_bytes_max = 12345;
            assert_eq!(cfg.architecture(), Some(a));
            assert_eq!(round_trip(&cfg), cfg, "{a}");
        }
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_nvm_log_ring_and_a_custom_profile_round_trip() {
        let dir = scratch("ring");
        let mut a = arch(Architecture::ThreeTier, &dir);
        a.ssd_profile.read_latency_ns += 1.0;
        a.policy = Some("spitfire:b".into());
        a.techniques = Some(Techniques::parse("cl,mini").unwrap());
        let mut cfg = DbConfig::from_arch(&a, dir.join("db")).unwrap();
        cfg.wal.buffer = LogBuffer::Nvm(NvmConfig::new(dir.join("ring.nvm"), ByteSize(4 << 20)));
        let text = cfg.to_toml_string().unwrap();
        assert!(text.contains("read_latency_ns"), "a profile that is no preset is written inline:\n{text}");
        assert_eq!(round_trip(&cfg), cfg);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_field_a_file_cannot_express_is_named() {
        let mut cfg = DbConfig::new("/tmp/x");
        cfg.redo_from_retained = true;
        cfg.buffer.evict_batch += 1;
        let e = cfg.to_toml_string().expect_err("refused").to_string();
        assert!(e.contains("redo_from_retained") && e.contains("buffer.evict_batch"), "{e}");
        let mut cfg = DbConfig::from_arch(&arch(Architecture::SsdBm, Path::new("/tmp")), "/tmp/x").unwrap();
        cfg.buffer.policy = "hymem".into();
        let e = cfg.to_toml_string().expect_err("refused").to_string();
        assert!(e.contains("buffer.policy"), "{e}");
    }

    #[test]
    fn a_small_file_uses_the_defaults() {
        let cfg = DbConfig::from_toml_str("dir = \"/tmp/d\"\n", "small.toml").unwrap();
        assert_eq!(cfg, DbConfig::new("/tmp/d"));
        assert_eq!(cfg.wal.file.dir, log_dir(Path::new("/tmp/d")));
        let text = "dir = \"/tmp/d\"\narchitecture = \"three-tier\"\n[nvm]\nsize = \"64MiB\"\n";
        let cfg = DbConfig::from_toml_str(text, "t.toml").unwrap();
        assert_eq!(cfg.architecture(), Some(Architecture::ThreeTier));
        assert_eq!(cfg.buffer.policy, "hymem");
        assert_eq!(cfg.buffer.nvm.as_ref().unwrap().path, Path::new("/tmp/d").join(NVM_POOL_FILE));
        let cfg =
            DbConfig::from_toml_str("dir = \"/d\"\narchitecture = \"nvm-direct\"\nnvm.size = \"8MiB\"\n", "t").unwrap();
        assert_eq!(cfg.direct_config().unwrap().nvm.size, ByteSize(8 << 20));
        assert!(DbConfig::new("/d").direct_config().is_err());
    }

    #[test]
    fn an_unknown_key_is_named_with_its_path_and_line() {
        let e = err("dir = \"/d\"\n[checkpoint]\nenabled = true\nlog-byts = 5\n");
        assert!(e.contains("bad.toml:4") && e.contains("checkpoint.log-byts") && e.contains("unknown field"), "{e}");
        let e = err("dir = \"/d\"\nwhatever = 1\n");
        assert!(e.contains("bad.toml:2") && e.contains("key whatever"), "{e}");
        let e = err("dir = \"/d\"\narchitecture = \"ssd-bm\"\n[policy.nvcache]\nobp = 1\n");
        assert!(e.contains("policy.nvcache.obp"), "{e}");
    }

    #[test]
    fn a_bad_value_is_named_with_its_path_and_line() {
        let e = err("dir = \"/d\"\n\n[checkpoint]\nlog-bytes = \"lots\"\n");
        assert!(e.contains("bad.toml:4") && e.contains("checkpoint.log-bytes") && e.contains("lots"), "{e}");
        let e = err("dir = \"/d\"\narchitecture = \"four-tier\"\n");
        assert!(e.contains("key architecture") && e.contains("four-tier"), "{e}");
        let e = err("dir = \"/d\"\narchitecture = \"ssd-bm\"\n[ssd]\nprofile = \"no-such-disk\"\n");
        assert!(e.contains("ssd.profile") && e.contains("no-such-disk"), "{e}");
        let e = err("dir = \"/d\"\narchitecture = \"ssd-bm\"\n[ssd]\nprofile = \"optane-dcpmm\"\n");
        assert!(e.contains("ssd.profile") && e.contains(":4"), "{e}");
        let e = err("dir = \"/d\"\npage-size = \"3KiB\"\n");
        assert!(e.contains("key page-size") && e.contains(":2"), "{e}");
        let e = err("dir = \"/d\"\narchitecture = \"ssd-bm\"\n[policy]\nname = \"lru\"\n");
        assert!(e.contains("key policy.name") && e.contains("lru") && e.contains(":4"), "{e}");
        let e = err("dir = \"/d\"\nisolation = \"serializable\"\n");
        assert!(e.contains("key isolation") && e.contains("serializable"), "{e}");
    }

    #[test]
    fn a_missing_or_misplaced_key_is_named() {
        let e = err("architecture = \"ssd-bm\"\n");
        assert!(e.contains("bad.toml") && e.contains("dir"), "{e}");
        let e = err("dir = \"/d\"\narchitecture = \"three-tier\"\n");
        assert!(e.contains("key nvm.size") && e.contains("required"), "{e}");
        let e = err("dir = \"/d\"\n[policy]\nname = \"eager\"\n");
        assert!(e.contains("key policy") && e.contains("needs `architecture`") && e.contains(":2"), "{e}");
        let e = err("dir = \"/d\"\narchitecture = \"basic-nvm-bm\"\ntechniques = \"all\"\nnvm.size = \"8MiB\"\n");
        assert!(e.contains("key architecture") && e.contains("techniques"), "{e}");
        let e = err("dir = \"/d\"\n[log.ring]\nsize = \"1MiB\"\n");
        assert!(e.contains("key log.ring") && e.contains("log.buffer"), "{e}");
        let e = err("dir = [\n");
        assert!(e.contains("bad.toml"), "{e}");
    }

    /// The examples of `docs/config.md` load, and say what they claim.
    #[test]
    fn the_documented_examples_load() {
        let doc = include_str!("../../../../docs/config.md");
        let blocks: Vec<&str> = doc.split("```toml\n").skip(1).map(|b| b.split("```").next().unwrap()).collect();
        assert_eq!(blocks.len(), 2, "three-tier and main-memory");
        let three = DbConfig::from_toml_str(blocks[0], "docs/config.md").unwrap();
        assert_eq!(three.architecture(), Some(Architecture::ThreeTier));
        assert_eq!(three.buffer.nvm.as_ref().unwrap().size, ByteSize(8 << 30));
        assert!(matches!(&three.wal.buffer, LogBuffer::Nvm(n) if n.size == ByteSize(32 << 20)));
        assert_eq!(three.checkpoint.log_bytes, 256 << 20);
        assert_eq!(round_trip(&three), three);
        let mm = DbConfig::from_toml_str(blocks[1], "docs/config.md").unwrap();
        assert_eq!(mm.architecture(), Some(Architecture::MainMemory));
        assert_eq!(mm.buffer.dram.size, ByteSize(512 << 20));
        assert_eq!(round_trip(&mm), mm);
    }

    #[test]
    fn load_names_a_missing_file_and_save_is_atomic() {
        let dir = scratch("save");
        let missing = dir.join("nope.toml");
        let e = DbConfig::load(&missing).expect_err("no file").to_string();
        assert!(e.contains(&missing.display().to_string()) && e.contains("cannot read"), "{e}");
        let path = dir.join("db.toml");
        fs::write(&path, "old").unwrap();
        let cfg = DbConfig::for_arch(&arch(Architecture::MainMemory, &dir), dir.join("db")).unwrap();
        cfg.save(&path).unwrap();
        assert_eq!(DbConfig::load(&path).unwrap(), cfg);
        let left: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("db.toml")], "no temporary file is left");
        fs::remove_dir_all(dir).unwrap();
    }
}
