//! Every field a scenario may carry, declared once: its path, what it holds, its
//! bounds, its allowed choices and its default.
//!
//! The validator walks a scenario's JSON with this table (`scenario/validate.rs`),
//! so a bound written here is the bound enforced; nothing else in the crate states a
//! per-field bound. The front end reads the same table (`raidlab._native.limits()`) to
//! know how to parse a value (a size such as `16K` for [`Kind::Bytes`], `unlimited`
//! for a nullable rate) and which user flag or TOML key to name when the simulator
//! refuses a path. Rules that tie several fields together (a RAID 6 needs four drives,
//! the seek figures are ordered, the workload region fits the array) are in `validate`.
//!
//! Bounds are sanity limits that keep a run finite and its memory fixed, not physics.

use serde_json::{json, Value};

use super::ScenarioError;

/// What a field holds, and so how a front end parses it and how it is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A whole number of things (drives, commands, zones, jobs).
    Count,
    /// A whole number of bytes (a front end may accept `16K`).
    Bytes,
    /// A whole number of nanoseconds.
    Ns,
    /// A whole number of KiB (Linux's `max_sectors_kb`).
    Kib,
    /// Bytes per second, a number.
    Rate,
    /// A percentage, a number (a front end may accept `50%`).
    Percent,
    /// A plain number (a time scale).
    Number,
    /// `true` or `false`.
    Bool,
    /// One string of [`Limit::choices`].
    Choice,
    /// Free text (a preset name, a path).
    Text,
    /// A RAID level: one of [`Limit::choices`], a number or `"concat"`.
    Level,
    /// A block-size mix: `[[bytes, weight], ...]`; the bounds are those of one size, the
    /// weights' those of the `.weight` limit under the same path.
    Mix,
    /// A list of member indices.
    Members,
    /// A list of whole numbers (a drive's zone table, its measured seek curve), each
    /// checked against the bounds.
    Ints,
    /// fio's `random_distribution`: `"uniform"` or `{"zipf": theta}`, ... (its
    /// parameters are checked by a rule).
    Distribution,
    /// A table of further fields (whose paths start with this one's).
    Table,
    /// A list of tables, each with the fields of the singular path (`workloads`).
    Tables,
}

impl Kind {
    /// The name the exported table uses.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Count => "count",
            Kind::Bytes => "bytes",
            Kind::Ns => "ns",
            Kind::Kib => "kib",
            Kind::Rate => "rate",
            Kind::Percent => "percent",
            Kind::Number => "number",
            Kind::Bool => "bool",
            Kind::Choice => "choice",
            Kind::Text => "text",
            Kind::Level => "level",
            Kind::Mix => "mix",
            Kind::Members => "members",
            Kind::Ints => "ints",
            Kind::Distribution => "distribution",
            Kind::Table => "table",
            Kind::Tables => "tables",
        }
    }

    /// Whole numbers only (times are integer nanoseconds, sizes whole bytes).
    pub fn is_integer(self) -> bool {
        matches!(self, Kind::Count | Kind::Bytes | Kind::Ns | Kind::Kib)
    }

    /// Numbers with a fraction allowed.
    pub fn is_real(self) -> bool {
        matches!(self, Kind::Rate | Kind::Percent | Kind::Number)
    }

    fn unit(self) -> &'static str {
        match self {
            Kind::Ns => " ns",
            Kind::Kib => " KiB",
            Kind::Rate => " B/s",
            Kind::Percent => " %",
            _ => "",
        }
    }
}

/// Which scenarios a field belongs to: most to all, some to one drive kind or one
/// workload kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every scenario that has the field's table.
    Always,
    /// Only drives of `kind = "hdd"`.
    Hdd,
    /// Only drives of `kind = "ssd"`.
    Ssd,
    /// Only drives of `kind = "nvme"`.
    Nvme,
    /// Only fio-style workloads (no `kind`, or `kind = "jobs"`).
    Jobs,
    /// Only trace replays (`kind = "trace"`).
    Trace,
    /// A key of a preset table the front end reads and never puts in a scenario (a
    /// controller's `kind`, its backup unit); a scenario carrying one is refused.
    Preset,
}

impl std::str::FromStr for Scope {
    type Err = ScenarioError;

    /// `always`, `hdd`, `ssd`, `jobs` or `trace`.
    fn from_str(s: &str) -> Result<Self, ScenarioError> {
        [
            Scope::Always,
            Scope::Hdd,
            Scope::Ssd,
            Scope::Nvme,
            Scope::Jobs,
            Scope::Trace,
            Scope::Preset,
        ]
        .into_iter()
        .find(|scope| scope.name() == s)
        .ok_or_else(|| ScenarioError {
            field: "scope".into(),
            message: format!(
                "must be one of always, hdd, ssd, nvme, jobs, trace, preset, got {s:?}"
            ),
        })
    }
}

impl Scope {
    /// The name the exported table uses.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Always => "always",
            Scope::Hdd => "hdd",
            Scope::Ssd => "ssd",
            Scope::Nvme => "nvme",
            Scope::Jobs => "jobs",
            Scope::Trace => "trace",
            Scope::Preset => "preset",
        }
    }
}

/// A bound: whole numbers exactly, others as `f64`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    /// A whole-number bound.
    Int(u64),
    /// A real bound.
    Real(f64),
}

impl Num {
    /// The bound as a float (exact for every bound the table declares but `seed`'s).
    pub fn as_f64(self) -> f64 {
        match self {
            Num::Int(n) => n as f64,
            Num::Real(x) => x,
        }
    }

    fn to_json(self) -> Value {
        match self {
            Num::Int(n) => json!(n),
            Num::Real(x) => json!(x),
        }
    }
}

/// What a field is when the scenario leaves it out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fallback {
    /// It must be given.
    Required,
    /// Absent means "none" (no rebuild, no scheduler tunables, unlimited).
    Absent,
    /// This whole number.
    Int(u64),
    /// This number.
    Real(f64),
    /// This truth value.
    Bool(bool),
    /// This string.
    Str(&'static str),
    /// An empty list.
    Empty,
}

impl Fallback {
    fn to_json(self) -> Value {
        match self {
            Fallback::Required | Fallback::Absent => Value::Null,
            Fallback::Int(n) => json!(n),
            Fallback::Real(x) => json!(x),
            Fallback::Bool(b) => json!(b),
            Fallback::Str(s) => json!(s),
            Fallback::Empty => json!([]),
        }
    }

    /// The whole-number default; panics for others (a table error caught by tests).
    pub fn int(self) -> u64 {
        match self {
            Fallback::Int(n) => n,
            other => panic!("not a whole-number default: {other:?}"),
        }
    }

    /// The numeric default; panics for others.
    pub fn real(self) -> f64 {
        match self {
            Fallback::Real(x) => x,
            Fallback::Int(n) => n as f64,
            other => panic!("not a numeric default: {other:?}"),
        }
    }
}

/// One field of the scenario and everything a value of it must satisfy on its own.
#[derive(Debug, Clone, Copy)]
pub struct Limit {
    /// Dotted path from the scenario's root (`array.drive.zones`); fields of each of
    /// `workloads` are declared under `workload.`.
    pub path: &'static str,
    /// Which scenarios have the field.
    pub scope: Scope,
    /// What it holds.
    pub kind: Kind,
    /// Smallest value allowed (inclusive unless `min_exclusive`).
    pub min: Option<Num>,
    /// Largest value allowed, inclusive.
    pub max: Option<Num>,
    /// `min` itself is refused (a time scale must be above 0).
    pub min_exclusive: bool,
    /// Values must be multiples of this (bytes in whole sectors).
    pub multiple_of: Option<u64>,
    /// Values must be powers of two.
    pub power_of_two: bool,
    /// Allowed strings of a [`Kind::Choice`] or [`Kind::Level`].
    pub choices: &'static [&'static str],
    /// `null` is allowed (unlimited, none).
    pub nullable: bool,
    /// Most entries of a list ([`Kind::Mix`], [`Kind::Members`], [`Kind::Tables`]).
    pub items_max: Option<u64>,
    /// What the field is when left out.
    pub default: Fallback,
    /// One line on what the field means.
    pub doc: &'static str,
}

impl Limit {
    const fn new(path: &'static str, scope: Scope, kind: Kind, doc: &'static str) -> Self {
        Self {
            path,
            scope,
            kind,
            min: None,
            max: None,
            min_exclusive: false,
            multiple_of: None,
            power_of_two: false,
            choices: &[],
            nullable: false,
            items_max: None,
            default: Fallback::Required,
            doc,
        }
    }

    const fn ints(self, min: u64, max: u64) -> Self {
        Self {
            min: Some(Num::Int(min)),
            max: Some(Num::Int(max)),
            ..self
        }
    }

    const fn at_least(self, min: u64) -> Self {
        Self {
            min: Some(Num::Int(min)),
            ..self
        }
    }

    const fn reals(self, min: f64, max: f64) -> Self {
        Self {
            min: Some(Num::Real(min)),
            max: Some(Num::Real(max)),
            ..self
        }
    }

    const fn above(self, min: f64) -> Self {
        Self {
            min: Some(Num::Real(min)),
            min_exclusive: true,
            ..self
        }
    }

    const fn of(self, choices: &'static [&'static str]) -> Self {
        Self { choices, ..self }
    }

    const fn nullable(self) -> Self {
        Self {
            nullable: true,
            default: Fallback::Absent,
            ..self
        }
    }

    const fn or(self, default: Fallback) -> Self {
        Self { default, ..self }
    }

    const fn multiple_of(self, unit: u64) -> Self {
        Self {
            multiple_of: Some(unit),
            ..self
        }
    }

    const fn power_of_two(self) -> Self {
        Self {
            power_of_two: true,
            ..self
        }
    }

    const fn items(self, max: u64) -> Self {
        Self {
            items_max: Some(max),
            ..self
        }
    }

    /// The field's own name: the last segment of its path.
    pub fn key(&self) -> &'static str {
        self.path.rsplit('.').next().unwrap_or(self.path)
    }

    /// The path of the table the field is in (`""` at the root).
    pub fn parent(&self) -> &'static str {
        self.path.rsplit_once('.').map_or("", |(parent, _)| parent)
    }

    /// Whether the field is in scope for a table of `scope` (drive or workload kind).
    pub fn applies(&self, scope: Scope) -> bool {
        self.scope == Scope::Always || self.scope == scope
    }

    /// The whole-number maximum; panics if there is none (a table error).
    pub const fn max_int(&self) -> u64 {
        match self.max {
            Some(Num::Int(n)) => n,
            _ => panic!("a limit without a whole-number maximum"),
        }
    }

    /// The whole-number minimum; panics if there is none (a table error).
    pub const fn min_int(&self) -> u64 {
        match self.min {
            Some(Num::Int(n)) => n,
            _ => panic!("a limit without a whole-number minimum"),
        }
    }

    /// The limit as the exported table shows it.
    pub fn to_json(&self) -> Value {
        let mut entry = json!({
            "path": self.path,
            "scope": self.scope.name(),
            "kind": self.kind.name(),
            "required": self.default == Fallback::Required,
            "nullable": self.nullable,
            "doc": self.doc,
        });
        let map = entry.as_object_mut().expect("an object");
        if let Some(min) = self.min {
            map.insert("min".into(), min.to_json());
        }
        if self.min_exclusive {
            map.insert("min_exclusive".into(), json!(true));
        }
        if let Some(max) = self.max {
            map.insert("max".into(), max.to_json());
        }
        if let Some(unit) = self.multiple_of {
            map.insert("multiple_of".into(), json!(unit));
        }
        if self.power_of_two {
            map.insert("power_of_two".into(), json!(true));
        }
        if !self.choices.is_empty() {
            map.insert("choices".into(), json!(self.choices));
        }
        if let Some(items) = self.items_max {
            map.insert("items_max".into(), json!(items));
        }
        if !matches!(self.default, Fallback::Required | Fallback::Absent) {
            map.insert("default".into(), self.default.to_json());
        }
        entry
    }

    /// Check one value of a scalar kind (numbers, bool, choice, text, level), or one
    /// entry of a list kind, against the limit; `field` is the path the error names (`workloads[2].iodepth`).
    pub fn check(&self, value: &Value, field: &str) -> Result<(), ScenarioError> {
        if value.is_null() {
            if self.nullable {
                return Ok(());
            }
            return refuse(field, "must be given (null is not allowed here)".into());
        }
        match self.kind {
            Kind::Bool if value.is_boolean() => Ok(()),
            Kind::Bool => refuse(field, format!("expected true or false, got {value}")),
            Kind::Text if value.is_string() => Ok(()),
            Kind::Text => refuse(field, format!("expected a string, got {value}")),
            Kind::Choice => match value.as_str() {
                Some(text) if self.choices.contains(&text) => Ok(()),
                _ => refuse(
                    field,
                    format!("must be one of {}, got {value}", self.choices.join(", ")),
                ),
            },
            Kind::Level => {
                let name = match value {
                    Value::Number(n) => n.as_u64().map(|n| n.to_string()),
                    Value::String(s) if s.parse::<u64>().is_err() => Some(s.clone()),
                    _ => None,
                };
                match name {
                    Some(name) if self.choices.contains(&name.as_str()) => Ok(()),
                    _ => refuse(
                        field,
                        format!("must be one of {}, got {value}", self.choices.join(", ")),
                    ),
                }
            }
            // Lists are checked an entry at a time: a size of a mix, a member index.
            kind if kind.is_integer() || matches!(kind, Kind::Mix | Kind::Members | Kind::Ints) => {
                self.check_integer(value, field)
            }
            kind if kind.is_real() => self.check_real(value, field),
            kind => panic!("{}: {} is not a scalar kind", self.path, kind.name()),
        }
    }

    /// Check one whole number (a size in a mix, a member index) against the limit.
    pub fn check_u64(&self, value: u64, field: &str) -> Result<(), ScenarioError> {
        let low = self.min.map_or(0, |m| m.as_f64() as u64);
        let high = self.max.map_or(u64::MAX, |m| match m {
            Num::Int(n) => n,
            Num::Real(x) => x as u64,
        });
        let in_range = low <= value && value <= high;
        let aligned = self
            .multiple_of
            .is_none_or(|unit| value.is_multiple_of(unit));
        let shaped = !self.power_of_two || value.is_power_of_two();
        if in_range && aligned && shaped {
            return Ok(());
        }
        refuse(
            field,
            format!("{}, got {}", self.allowed(), self.show(value as f64)),
        )
    }

    fn check_integer(&self, value: &Value, field: &str) -> Result<(), ScenarioError> {
        match value {
            Value::Number(n) if n.is_u64() => self.check_u64(n.as_u64().unwrap_or(0), field),
            Value::Number(n) if n.is_i64() => refuse(
                field,
                format!("{}, got {}", self.allowed(), n.as_i64().unwrap_or(0)),
            ),
            _ => refuse(field, format!("expected a whole number, got {value}")),
        }
    }

    fn check_real(&self, value: &Value, field: &str) -> Result<(), ScenarioError> {
        let Some(x) = value.as_f64().filter(|x| x.is_finite()) else {
            return refuse(field, format!("expected a number, got {value}"));
        };
        let above_min = self.min.is_none_or(|m| {
            let m = m.as_f64();
            x > m || (x == m && !self.min_exclusive)
        });
        let below_max = self.max.is_none_or(|m| x <= m.as_f64());
        if above_min && below_max {
            return Ok(());
        }
        refuse(field, format!("{}, got {}", self.allowed(), self.show(x)))
    }

    /// "must be 1..=1024", "must be a power of two in 512 B..=1 GiB", ...
    pub fn allowed(&self) -> String {
        let range = match (self.min, self.max) {
            (Some(min), Some(max)) if min == max => self.show_bound(min),
            (Some(min), Some(max)) => {
                format!("{}..={}", self.show_bound(min), self.show_bound(max))
            }
            (Some(min), None) if self.min_exclusive => {
                format!("above {}", self.show_bound(min))
            }
            (Some(min), None) => format!("at least {}", self.show_bound(min)),
            (None, Some(max)) => format!("at most {}", self.show_bound(max)),
            (None, None) => String::new(),
        };
        let shape = match (self.power_of_two, self.multiple_of) {
            (true, _) => "a power of two".to_string(),
            (false, Some(unit)) => format!("a multiple of {}", self.show(unit as f64)),
            (false, None) => String::new(),
        };
        match (shape.is_empty(), range.is_empty()) {
            (true, _) => format!("must be {range}"),
            (false, true) => format!("must be {shape}"),
            (false, false) => format!("must be {shape} in {range}"),
        }
    }

    /// A bound as declared: a whole-number bound exactly (the seed's 2^64 - 1 is not a
    /// float's 18446744073709552000).
    fn show_bound(&self, bound: Num) -> String {
        match bound {
            Num::Int(n) if self.kind != Kind::Bytes => format!("{n}{}", self.kind.unit()),
            _ => self.show(bound.as_f64()),
        }
    }

    fn show(&self, value: f64) -> String {
        if self.kind == Kind::Bytes {
            return show_bytes(value as u64);
        }
        format!("{value}{}", self.kind.unit())
    }
}

/// `512 B`, `64 KiB`, `1 GiB`, `1000 B` (not a whole number of a larger unit).
pub fn show_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut shown = format!("{bytes} B");
    for (i, unit) in UNITS.iter().enumerate() {
        let size = 1u64 << (10 * (i + 1));
        if bytes >= size && bytes.is_multiple_of(size) {
            shown = format!("{} {unit}", bytes / size);
        }
    }
    shown
}

pub(super) fn refuse(field: &str, message: String) -> Result<(), ScenarioError> {
    Err(ScenarioError {
        field: field.to_string(),
        message,
    })
}

/// Longest single time a scenario may set (a firmware or mechanical time, a scheduler
/// deadline): 1000 s.
pub const NS_MAX: u64 = 1_000_000_000_000;
/// Slowest rate of any path: 1000 B/s.
pub const RATE_MIN: f64 = 1e3;
/// Fastest rate of any path: 1 TB/s, far above any bus of this era.
pub const RATE_MAX: f64 = 1e12;
/// Largest drive: 1 PiB.
pub const CAPACITY_BYTES_MAX: u64 = 1 << 50;
/// Smallest drive: 1 MiB.
pub const CAPACITY_BYTES_MIN: u64 = 1 << 20;
/// Largest buffer or cache: 1 TiB.
pub const BUFFER_BYTES_MAX: u64 = 1 << 40;
/// Outstanding requests per job, requests a device or scheduler holds.
pub const IODEPTH_MAX: u64 = 65_536;
/// Smallest transfer (one sector).
pub const BLOCK_BYTES_MIN: u64 = 512;
/// Largest transfer.
pub const BLOCK_BYTES_MAX: u64 = 1 << 30;
/// Sector: every offset and transfer is a whole number of them.
pub const SECTOR_BYTES: u64 = raidlab_layout::SECTOR_BYTES;
/// Most members of an array.
pub const MEMBERS_MAX: u64 = raidlab_layout::MEMBERS_MAX as u64;
/// Fewest sub-arrays of a RAID 50/60 (one would be a plain RAID 5/6).
pub const SPANS_MIN: u64 = 2;
/// Measured or warm-up host I/Os of one workload.
pub const IOS_MAX: u64 = 1_000_000_000;
/// Most data surfaces of an HDD (a head index fits in 8 bits: `drive::hdd_mechanics`).
pub const HDD_SURFACES_MAX: u64 = 255;
/// Most cylinders of an HDD (about 10 times today's largest drives).
pub const HDD_CYLINDERS_MAX: u64 = 1 << 24;
/// Most zones of an HDD's zone table.
pub const HDD_ZONES_MAX: u64 = 1024;
/// Most points of an HDD's measured seek curve.
pub const HDD_SEEK_POINTS_MAX: u64 = 65_536;
/// Most buffer segments of an HDD.
pub const HDD_CACHE_SEGMENTS_MAX: u64 = 256;

const LEVELS: &[&str] = &["0", "1", "4", "5", "6", "10", "50", "60", "concat"];
/// md's layout names; the first of each family is md's default (see
/// `raidlab_layout::Level::layouts`, which a test holds this list to).
pub const LAYOUTS: &[&str] = &[
    "left-symmetric",
    "left-asymmetric",
    "right-symmetric",
    "right-asymmetric",
    "near",
    "far",
    "offset",
];
const RW: &[&str] = &[
    "read",
    "write",
    "randread",
    "randwrite",
    "rw",
    "randrw",
    "trim",
    "randtrim",
    "trimwrite",
    "randtrimwrite",
];

use Fallback::{Absent, Bool as B, Empty, Int, Real, Str};
use Kind::*;
use Scope::{Always, Hdd, Jobs, Nvme, Preset, Ssd, Trace};

macro_rules! limits {
    ($($name:ident = $limit:expr;)*) => {
        $(
            #[doc = concat!("One entry of [`LIMITS`]: `", stringify!($limit), "`.")]
            pub const $name: Limit = $limit;
        )*
        /// Every field of a scenario, in the order a front end writes them.
        pub const LIMITS: &[Limit] = &[$($name),*];
    };
}

limits! {
    SCHEMA = Limit::new("schema", Always, Count, "schema version of the document").ints(1, 1);
    SEED = Limit::new("seed", Always, Count, "seeds every random choice of the run")
        .ints(0, u64::MAX);
    ARRAY = Limit::new("array", Always, Table, "what is simulated");
    WORKLOAD = Limit::new("workload", Always, Table, "what is asked of the array").nullable();
    WORKLOADS = Limit::new("workloads", Always, Tables, "workloads running at once")
        .items(256).or(Empty);

    LEVEL = Limit::new("array.level", Always, Level, "RAID level").of(LEVELS);
    LAYOUT = Limit::new("array.layout", Always, Choice, "md's parity or RAID 10 layout")
        .of(LAYOUTS).nullable();
    COPIES = Limit::new("array.copies", Always, Count, "RAID 10 copies of each chunk")
        .ints(2, MEMBERS_MAX).nullable();
    SPANS = Limit::new("array.spans", Always, Count, "RAID 50/60 sub-arrays")
        .ints(SPANS_MIN, MEMBERS_MAX / 3).nullable();
    FAILED = Limit::new("array.failed", Always, Members, "failed member indices")
        .ints(0, MEMBERS_MAX - 1).items(MEMBERS_MAX).or(Empty);
    REBUILD = Limit::new("array.rebuild", Always, Table, "a failed member being rebuilt")
        .nullable();
    REBUILD_MEMBER = Limit::new("array.rebuild.member", Always, Count, "the member rebuilt")
        .ints(0, MEMBERS_MAX - 1);
    REBUILD_RATE = Limit::new("array.rebuild.rate_bytes_per_s", Always, Rate,
        "rate limit of the rebuild stream").reals(1024.0, RATE_MAX);
    REBUILD_FAILED_AT = Limit::new("array.rebuild.failed_at_ns", Always, Ns,
        "when the member fails, into the run; a hot spare rebuilds it at once")
        .ints(0, NS_MAX).nullable();
    REBUILD_RATE_MIN = Limit::new("array.rebuild.rate_min_bytes_per_s", Always, Rate,
        "rate the rebuild is kept at under load, overriding the controller's (null = its)")
        .reals(1024.0, RATE_MAX).nullable();
    STRIPE_UNIT = Limit::new("array.stripe_unit_bytes", Always, Bytes, "chunk on one member")
        .ints(SECTOR_BYTES, BLOCK_BYTES_MAX).power_of_two();
    DRIVE_COUNT = Limit::new("array.drive_count", Always, Count, "members of the array")
        .ints(1, MEMBERS_MAX);
    DRIVE = Limit::new("array.drive", Always, Table, "the drive every member is");
    CONTROLLER = Limit::new("array.controller", Always, Table, "the controller");
    HOST = Limit::new("array.host", Always, Table, "the host's I/O stack").or(Absent);
    DELETED = Limit::new("array.deleted_percent", Always, Percent,
        "share of the array the host deleted after preconditioning").reals(0.0, 99.0)
        .or(Real(0.0));
    SPARES = Limit::new("array.spares", Always, Count, "hot spares standing by")
        .ints(0, MEMBERS_MAX).or(Int(0));

    DRIVE_KIND = Limit::new("array.drive.kind", Always, Choice, "drive model").of(&["hdd", "ssd", "nvme"]);
    DRIVE_MODEL = Limit::new("array.drive.model", Always, Text, "preset name, reported back")
        .or(Str(""));
    HDD_CAPACITY = Limit::new("array.drive.capacity_bytes", Hdd, Bytes, "usable capacity")
        .ints(CAPACITY_BYTES_MIN, CAPACITY_BYTES_MAX);
    HDD_RPM = Limit::new("array.drive.rpm", Hdd, Count, "spindle speed").ints(1000, 30_000);
    HDD_SEEK_TRACK = Limit::new("array.drive.seek_ns_track_to_track", Hdd, Ns,
        "seek to the adjacent track").ints(1, NS_MAX);
    HDD_SEEK_AVG = Limit::new("array.drive.seek_ns_avg", Hdd, Ns, "average seek").ints(1, NS_MAX);
    HDD_SEEK_FULL = Limit::new("array.drive.seek_ns_full_stroke", Hdd, Ns, "full-stroke seek")
        .ints(1, NS_MAX);
    HDD_MEDIA_OUTER = Limit::new("array.drive.media_rate_bytes_per_s_outer", Hdd, Rate,
        "media rate at the outer zone").reals(RATE_MIN, RATE_MAX);
    HDD_MEDIA_INNER = Limit::new("array.drive.media_rate_bytes_per_s_inner", Hdd, Rate,
        "media rate at the inner zone").reals(RATE_MIN, RATE_MAX);
    HDD_ZONES = Limit::new("array.drive.zones", Hdd, Count, "zones of constant bytes per track")
        .ints(1, 1024).or(Int(16));
    HDD_COMMAND_OVERHEAD = Limit::new("array.drive.command_overhead_ns", Hdd, Ns,
        "firmware time per command").ints(0, NS_MAX);
    HDD_LINK_RATE = Limit::new("array.drive.link_rate_bytes_per_s", Hdd, Rate,
        "interface payload rate").reals(RATE_MIN, RATE_MAX);
    HDD_CACHE = Limit::new("array.drive.cache_bytes", Hdd, Bytes, "drive buffer")
        .ints(0, BUFFER_BYTES_MAX);
    HDD_READ_AHEAD = Limit::new("array.drive.read_ahead_bytes", Hdd, Bytes,
        "read-ahead past a read (0 = off)").ints(0, BUFFER_BYTES_MAX);
    HDD_WRITE_CACHE = Limit::new("array.drive.write_cache", Hdd, Bool,
        "a write completes once buffered");
    HDD_WRITE_BUFFER = Limit::new("array.drive.write_buffer_bytes", Hdd, Bytes,
        "write cache off: write data held until on the platter (null = cache_bytes)")
        .ints(SECTOR_BYTES, BUFFER_BYTES_MAX).nullable();
    HDD_NCQ = Limit::new("array.drive.ncq_depth", Hdd, Count, "commands the drive accepts at once")
        .ints(1, 256).or(Int(32));
    HDD_SURFACES = Limit::new("array.drive.surfaces", Hdd, Count,
        "data surfaces (tracks per cylinder; null = 1)").ints(1, HDD_SURFACES_MAX).nullable();
    HDD_ZONE_FIRST_CYL = Limit::new("array.drive.zone_first_cylinder", Hdd, Ints,
        "zone table: first cylinder of each zone (empty = linear zones)")
        .ints(0, HDD_CYLINDERS_MAX).items(HDD_ZONES_MAX).or(Empty);
    HDD_ZONE_LAST_CYL = Limit::new("array.drive.zone_last_cylinder", Hdd, Ints,
        "zone table: last cylinder of each zone").ints(0, HDD_CYLINDERS_MAX).items(HDD_ZONES_MAX).or(Empty);
    HDD_ZONE_SPT = Limit::new("array.drive.zone_sectors_per_track", Hdd, Ints,
        "zone table: 512 B sectors per track of each zone").ints(1, 100_000).items(HDD_ZONES_MAX).or(Empty);
    HDD_ZONE_TRACK_SKEW = Limit::new("array.drive.zone_track_skew_sectors", Hdd, Ints,
        "zone table: track skew (sectors) of each zone").ints(0, 100_000).items(HDD_ZONES_MAX).or(Empty);
    HDD_ZONE_CYL_SKEW = Limit::new("array.drive.zone_cylinder_skew_sectors", Hdd, Ints,
        "zone table: cylinder skew (sectors) of each zone").ints(0, 100_000).items(HDD_ZONES_MAX).or(Empty);
    HDD_SEEK_TABLE_CYL = Limit::new("array.drive.seek_table_cylinders", Hdd, Ints,
        "measured seek curve: distances in cylinders, ascending (empty = datasheet curve)")
        .ints(1, HDD_CYLINDERS_MAX).items(HDD_SEEK_POINTS_MAX).or(Empty);
    HDD_SEEK_TABLE_NS = Limit::new("array.drive.seek_table_ns", Hdd, Ints,
        "measured seek curve: seek time at each distance").ints(1, NS_MAX).items(HDD_SEEK_POINTS_MAX).or(Empty);
    HDD_HEAD_SWITCH = Limit::new("array.drive.head_switch_ns", Hdd, Ns,
        "switch to another surface of the cylinder (null = 0)").ints(0, NS_MAX).nullable();
    HDD_WRITE_SETTLE = Limit::new("array.drive.write_settle_ns", Hdd, Ns,
        "extra settling before a write (null = 0)").ints(0, NS_MAX).nullable();
    HDD_OVH_RH_R = Limit::new("array.drive.overhead_ns_read_hit_after_read", Hdd, Ns,
        "overhead of a buffer-hit read after a read (null = command_overhead_ns)")
        .ints(0, NS_MAX).nullable();
    HDD_OVH_RH_W = Limit::new("array.drive.overhead_ns_read_hit_after_write", Hdd, Ns,
        "overhead of a buffer-hit read after a write (null = command_overhead_ns)")
        .ints(0, NS_MAX).nullable();
    HDD_OVH_RM_R = Limit::new("array.drive.overhead_ns_read_miss_after_read", Hdd, Ns,
        "overhead of a platter read after a read (null = command_overhead_ns)")
        .ints(0, NS_MAX).nullable();
    HDD_OVH_RM_W = Limit::new("array.drive.overhead_ns_read_miss_after_write", Hdd, Ns,
        "overhead of a platter read after a write (null = command_overhead_ns)")
        .ints(0, NS_MAX).nullable();
    HDD_OVH_WH_R = Limit::new("array.drive.overhead_ns_write_hit_after_read", Hdd, Ns,
        "overhead of a cached write after a read (null = command_overhead_ns)")
        .ints(0, NS_MAX).nullable();
    HDD_OVH_WH_W = Limit::new("array.drive.overhead_ns_write_hit_after_write", Hdd, Ns,
        "overhead of a cached write after a write (null = command_overhead_ns)")
        .ints(0, NS_MAX).nullable();
    HDD_OVH_WM_R = Limit::new("array.drive.overhead_ns_write_miss_after_read", Hdd, Ns,
        "overhead of a platter write after a read (null = command_overhead_ns)")
        .ints(0, NS_MAX).nullable();
    HDD_OVH_WM_W = Limit::new("array.drive.overhead_ns_write_miss_after_write", Hdd, Ns,
        "overhead of a platter write after a write (null = command_overhead_ns)")
        .ints(0, NS_MAX).nullable();
    HDD_CACHE_SEGMENTS = Limit::new("array.drive.cache_segments", Hdd, Count,
        "buffer segments, one stream each (null = one read-ahead stream)")
        .ints(1, HDD_CACHE_SEGMENTS_MAX).nullable();
    HDD_CACHE_SEGMENT_BYTES = Limit::new("array.drive.cache_segment_bytes", Hdd, Bytes,
        "bytes of one buffer segment (null = cache_bytes / cache_segments)")
        .ints(SECTOR_BYTES, BUFFER_BYTES_MAX).nullable();
    HDD_READ_AHEAD_SCHEME = Limit::new("array.drive.read_ahead_scheme", Hdd, Choice,
        "prefetch past a read: track, cylinder, segment, sequential (null = read_ahead_bytes)")
        .of(&["track", "cylinder", "segment", "sequential"]).nullable();
    HDD_READ_AHEAD_KEEPS_REQUEST = Limit::new("array.drive.read_ahead_keeps_request", Hdd, Bool,
        "prefetch keeps the request's data in its segment (null = false)").nullable();
    HDD_READ_HITS_ON_WRITE_DATA = Limit::new("array.drive.read_hits_on_write_data", Hdd, Bool,
        "a segmented buffer serves reads from written data (null = true)").nullable();

    SSD_CAPACITY = Limit::new("array.drive.capacity_bytes", Ssd, Bytes, "rated capacity")
        .ints(CAPACITY_BYTES_MIN, CAPACITY_BYTES_MAX);
    SSD_LINK_RATE = Limit::new("array.drive.link_rate_bytes_per_s", Ssd, Rate,
        "interface payload rate").reals(RATE_MIN, RATE_MAX);
    SSD_COMMAND_OVERHEAD = Limit::new("array.drive.command_overhead_ns", Ssd, Ns,
        "firmware time per command").ints(0, NS_MAX);
    SSD_LINK_COMMAND_OVERHEAD = Limit::new("array.drive.link_command_overhead_ns", Ssd, Ns,
        "link time per command, serial with the data (SATA FIS exchange)").ints(0, NS_MAX)
        .or(Int(0));
    SSD_WRITE_LINK_RATE = Limit::new("array.drive.write_link_rate_bytes_per_s", Ssd, Rate,
        "writes' payload rate on the link (absent: link_rate_bytes_per_s)")
        .reals(RATE_MIN, RATE_MAX).nullable();
    SSD_WRITE_LINK_COMMAND_OVERHEAD = Limit::new("array.drive.write_link_command_overhead_ns",
        Ssd, Ns, "link time per write command (absent: link_command_overhead_ns)")
        .ints(0, NS_MAX).nullable();
    SSD_CHANNELS = Limit::new("array.drive.channels", Ssd, Count, "flash channels").ints(1, 64);
    SSD_DIES = Limit::new("array.drive.dies_per_channel", Ssd, Count, "dies on each channel")
        .ints(1, 64);
    SSD_PAGE = Limit::new("array.drive.page_bytes", Ssd, Bytes, "flash page")
        .ints(512, 1 << 20).power_of_two();
    SSD_READ_PAGE = Limit::new("array.drive.read_page_ns", Ssd, Ns, "page read time tR")
        .ints(1, NS_MAX);
    SSD_PROGRAM_PAGE = Limit::new("array.drive.program_page_ns", Ssd, Ns,
        "page program time tPROG").ints(1, NS_MAX);
    SSD_CHANNEL_RATE = Limit::new("array.drive.channel_rate_bytes_per_s", Ssd, Rate,
        "flash channel transfer rate").reals(RATE_MIN, RATE_MAX);
    SSD_WRITE_BUFFER = Limit::new("array.drive.write_buffer_bytes", Ssd, Bytes,
        "write buffer; a write completes once buffered").ints(0, BUFFER_BYTES_MAX);
    SSD_WRITE_COMMIT = Limit::new("array.drive.write_commit_ns", Ssd, Ns,
        "latency before a write is buffered").ints(0, NS_MAX).or(Int(0));
    SSD_QUEUED_LATENCY = Limit::new("array.drive.queued_command_latency_ns", Ssd, Ns,
        "extra latency of a queued command").ints(0, NS_MAX).or(Int(0));
    SSD_WRITE_MERGE_UNIT = Limit::new("array.drive.write_merge_unit_bytes", Ssd, Bytes,
        "a write covering this unit in part reads it first (0 = never)").ints(0, 1 << 20)
        .or(Int(0));
    SSD_READ_BUFFER = Limit::new("array.drive.read_buffer", Ssd, Bool,
        "a DRAM read buffer frees a die once its page is sensed").or(B(false));
    SSD_PROGRAM_SUSPEND = Limit::new("array.drive.program_suspend", Ssd, Bool,
        "a read suspends a program or erase").or(B(false));
    SSD_READ_RETRY = Limit::new("array.drive.read_retry_percent", Ssd, Percent,
        "share of page reads the ECC fails, each read again at the next read-retry offset")
        .reals(0.0, 50.0).or(Real(0.0));
    SSD_FTL = Limit::new("array.drive.ftl", Ssd, Table, "page-mapped FTL").nullable();
    SSD_NCQ = Limit::new("array.drive.ncq_depth", Ssd, Count, "commands the drive accepts at once")
        .ints(1, IODEPTH_MAX).or(Int(32));

    NVME_CAPACITY = Limit::new("array.drive.capacity_bytes", Nvme, Bytes, "usable capacity")
        .ints(CAPACITY_BYTES_MIN, CAPACITY_BYTES_MAX);
    NVME_PCIE_GEN = Limit::new("array.drive.pcie_gen", Nvme, Count, "PCIe generation of the link")
        .ints(1, 5);
    NVME_PCIE_LANES = Limit::new("array.drive.pcie_lanes", Nvme, Count,
        "lanes of the PCIe link (1, 2, 4, 8 or 16)").ints(1, 16);
    NVME_MAX_PAYLOAD = Limit::new("array.drive.pcie_max_payload_bytes", Nvme, Bytes,
        "largest data payload of one TLP (Max_Payload_Size)").ints(128, 4096).power_of_two()
        .or(Int(256));
    NVME_IO_QUEUES = Limit::new("array.drive.io_queues", Nvme, Count,
        "I/O submission queues the host uses").ints(1, 65_535).or(Int(1));
    NVME_QUEUE_ENTRIES = Limit::new("array.drive.queue_entries", Nvme, Count,
        "entries of each queue (it holds one command fewer)").ints(2, 65_536).or(Int(1024));
    NVME_COMMAND_OVERHEAD = Limit::new("array.drive.command_overhead_ns", Nvme, Ns,
        "firmware time per command").ints(0, NS_MAX);
    NVME_CHANNELS = Limit::new("array.drive.channels", Nvme, Count, "flash channels").ints(1, 64);
    NVME_DIES = Limit::new("array.drive.dies_per_channel", Nvme, Count, "dies on each channel")
        .ints(1, 64);
    NVME_PAGE = Limit::new("array.drive.page_bytes", Nvme, Bytes, "flash page")
        .ints(512, 1 << 20).power_of_two();
    NVME_READ_PAGE = Limit::new("array.drive.read_page_ns", Nvme, Ns, "page read time tR")
        .ints(1, NS_MAX);
    NVME_PROGRAM_PAGE = Limit::new("array.drive.program_page_ns", Nvme, Ns,
        "page program time tPROG").ints(1, NS_MAX);
    NVME_CHANNEL_RATE = Limit::new("array.drive.channel_rate_bytes_per_s", Nvme, Rate,
        "flash channel transfer rate").reals(RATE_MIN, RATE_MAX);
    NVME_WRITE_BUFFER = Limit::new("array.drive.write_buffer_bytes", Nvme, Bytes,
        "write buffer; a write completes once buffered").ints(0, BUFFER_BYTES_MAX);
    NVME_READ_BUFFER = Limit::new("array.drive.read_buffer", Nvme, Bool,
        "a DRAM read buffer frees a die once its page is sensed").or(B(false));
    NVME_PROGRAM_SUSPEND = Limit::new("array.drive.program_suspend", Nvme, Bool,
        "a read suspends a program or erase").or(B(false));

    FTL_SPARE = Limit::new("array.drive.ftl.spare_percent", Ssd, Percent,
        "factory spare area, percent of the rated capacity").reals(0.1, 400.0);
    FTL_OP = Limit::new("array.drive.ftl.op_percent", Ssd, Percent,
        "share of the rated capacity left unpartitioned").reals(0.0, 90.0).or(Real(0.0));
    FTL_PAGES_PER_BLOCK = Limit::new("array.drive.ftl.pages_per_block", Ssd, Count,
        "flash pages per erase block").ints(2, 65_536);
    FTL_ERASE = Limit::new("array.drive.ftl.erase_ns", Ssd, Ns, "block erase time tBERS")
        .ints(1, NS_MAX);
    FTL_GC_FIRMWARE = Limit::new("array.drive.ftl.gc_unit_firmware_ns", Ssd, Ns,
        "firmware time per unit garbage collection relocates").ints(0, NS_MAX).or(Int(0));
    FTL_GC_BURST = Limit::new("array.drive.ftl.gc_burst_units", Ssd, Count,
        "relocations done in one go (0: paced per host write)").ints(0, 1 << 20).or(Int(0));
    FTL_IDLE_GC = Limit::new("array.drive.ftl.idle_gc_free_percent", Ssd, Percent,
        "free space garbage collection cleans ahead while the flash is idle, percent of the \
         flash (0: none)").reals(0.0, 50.0).or(Real(0.0));
    FTL_MAP_UNIT = Limit::new("array.drive.ftl.map_unit_bytes", Ssd, Bytes, "mapping unit")
        .ints(512, 1 << 20).or(Int(4096));
    FTL_GC = Limit::new("array.drive.ftl.gc", Ssd, Choice, "victim choice")
        .of(&["greedy", "cost-benefit"]).or(Str("greedy"));
    FTL_UNITS = Limit::new("array.drive.ftl.units", Ssd, Count, "logical units the FTL keeps")
        .ints(1024, 1 << 24).or(Int(1 << 18));
    FTL_PRECONDITION = Limit::new("array.drive.ftl.precondition", Ssd, Choice,
        "fresh out of the box or steady state").of(&["fob", "steady"]).or(Str("steady"));

    CONTROLLER_NAME = Limit::new("array.controller.name", Always, Text,
        "preset name, reported back").or(Str(""));
    CONTROLLER_REQUEST_OVERHEAD = Limit::new("array.controller.request_overhead_ns", Always, Ns,
        "serial processing per host request").ints(0, NS_MAX).or(Int(0));
    CONTROLLER_MEMBER_OP_OVERHEAD = Limit::new("array.controller.member_op_overhead_ns", Always,
        Ns, "serial processing per member operation").ints(0, NS_MAX).or(Int(0));
    CONTROLLER_MAX_TRANSFER = Limit::new("array.controller.max_member_transfer_bytes", Always,
        Bytes, "member operations are split at this size")
        .ints(SECTOR_BYTES, BLOCK_BYTES_MAX).multiple_of(SECTOR_BYTES).or(Int(32 << 20));
    CONTROLLER_MEMBER_COMMANDS = Limit::new("array.controller.member_commands", Always, Choice,
        "strips a request puts on a member: one command (merged) or one each (per-strip)")
        .of(&["merged", "per-strip"]).or(Str("merged"));
    CONTROLLER_MEMBER_DISPATCH = Limit::new("array.controller.member_dispatch", Always, Choice,
        "when a request's member commands leave: all once every one is built (batch) or each \
         as soon as it is built, its bookkeeping after (serial)")
        .of(&["batch", "serial"]).or(Str("batch"));
    CONTROLLER_SPINDLE_PHASE = Limit::new("array.controller.spindle_phase", Always, Choice,
        "HDD members' platters: at one angle at every instant (lockstep) or each at its own \
         angle, drawn from the seed and the member index (per-member)")
        .of(&["lockstep", "per-member"]).or(Str("lockstep"));
    CONTROLLER_MEMBER_QUEUE_DEPTH = Limit::new("array.controller.member_queue_depth", Always,
        Count, "commands outstanding on one member at most (null = the drive's queue)")
        .ints(1, 256).nullable();
    CONTROLLER_PORT_RATE = Limit::new("array.controller.port_rate_bytes_per_s", Always, Rate,
        "per-port link rate").reals(RATE_MIN, RATE_MAX);
    CONTROLLER_FULL_RATE_PORTS = Limit::new("array.controller.full_rate_ports", Always, Count,
        "members on ports of port_rate_bytes_per_s, the first ones; the others are on ports of \
         slow_port_rate_bytes_per_s (null = all)").ints(0, MEMBERS_MAX).nullable();
    CONTROLLER_SLOW_PORT_RATE = Limit::new("array.controller.slow_port_rate_bytes_per_s", Always,
        Rate, "link rate of the ports after the full-rate ones (a chipset's older SATA ports; \
         null = none)").reals(RATE_MIN, RATE_MAX).nullable();
    CONTROLLER_BUS_RATE = Limit::new("array.controller.bus_rate_bytes_per_s", Always, Rate,
        "shared host path, each direction (null = unlimited)").reals(RATE_MIN, RATE_MAX)
        .nullable();
    CONTROLLER_READ_RATE_MAX = Limit::new("array.controller.read_rate_bytes_per_s_max", Always,
        Rate, "read data-path cap (null = unlimited)").reals(RATE_MIN, RATE_MAX).nullable();
    CONTROLLER_WRITE_RATE_MAX = Limit::new("array.controller.write_rate_bytes_per_s_max",
        Always, Rate, "write data-path cap (null = unlimited)").reals(RATE_MIN, RATE_MAX)
        .nullable();
    CONTROLLER_READ_AHEAD = Limit::new("array.controller.read_ahead_bytes", Always, Bytes,
        "sequential read-ahead segment (0 = off)").ints(0, BLOCK_BYTES_MAX)
        .multiple_of(SECTOR_BYTES).or(Int(0));
    // 4 in flight: assumed, typical of RAID firmware; a controller asked to read ahead
    // without its own read-ahead figures gets these segments (the front end's
    // --read-ahead), as does a scenario that leaves the field out.
    CONTROLLER_READ_AHEAD_SEGMENTS = Limit::new("array.controller.read_ahead_segments", Always,
        Count, "read-ahead segments in flight").ints(1, 64).or(Int(4));
    CONTROLLER_READ_HIT_OVERHEAD = Limit::new("array.controller.read_hit_overhead_ns", Always,
        Ns, "serial cost of a read-ahead hit").ints(0, NS_MAX).or(Int(0));
    CONTROLLER_READ_AHEAD_ALWAYS = Limit::new("array.controller.read_ahead_always", Always, Bool,
        "read ahead after every read").or(B(false));
    CONTROLLER_PARITY_RATE = Limit::new("array.controller.parity_rate_bytes_per_s", Always, Rate,
        "parity engine rate (null = free)").reals(RATE_MIN, RATE_MAX).nullable();
    CONTROLLER_READ_BALANCE = Limit::new("array.controller.read_balance", Always, Choice,
        "RAID 1/10 read balancing").of(&["round-robin", "least-outstanding", "md"])
        .or(Str("round-robin"));
    CONTROLLER_CACHE = Limit::new("array.controller.cache_bytes", Always, Bytes,
        "controller write cache (0 = none)").ints(0, BUFFER_BYTES_MAX).or(Int(0));
    CONTROLLER_WRITE_BACK = Limit::new("array.controller.write_back", Always, Bool,
        "acknowledge writes once cached").or(B(false));
    CONTROLLER_CACHE_OVERHEAD = Limit::new("array.controller.cache_overhead_ns", Always, Ns,
        "serial cache management per request").ints(0, NS_MAX).or(Int(0));
    CONTROLLER_DESTAGE = Limit::new("array.controller.destage_concurrency", Always, Count,
        "destages in flight").ints(1, 256).or(Int(4));
    CONTROLLER_DIRTY_LOW = Limit::new("array.controller.dirty_low_percent", Always, Percent,
        "dirty share at which destaging stops").reals(0.0, 95.0).or(Real(0.0));
    CONTROLLER_DIRTY_HIGH = Limit::new("array.controller.dirty_high_percent", Always, Percent,
        "dirty share above which an idle cache destages").reals(0.0, 100.0).or(Real(0.0));
    CONTROLLER_TRIM_PASSTHROUGH = Limit::new("array.controller.trim_passthrough", Always, Bool,
        "host discards go on to the members").or(B(false));
    CONTROLLER_FASTPATH_OVERHEAD = Limit::new("array.controller.fastpath_overhead_ns", Always, Ns,
        "firmware time per FastPath I/O (null: no FastPath)").ints(0, NS_MAX).nullable();
    CONTROLLER_FASTPATH = Limit::new("array.controller.fastpath", Always, Bool, "FastPath on")
        .or(B(false));
    CONTROLLER_REBUILD_RATE_MIN = Limit::new("array.controller.rebuild_rate_min_bytes_per_s",
        Always, Rate, "rate a rebuild is kept at under load, per member (md's speed_limit_min; \
        null = none)").reals(1024.0, RATE_MAX).nullable();
    CONTROLLER_REBUILD_SHARE = Limit::new("array.controller.rebuild_share_percent", Always,
        Percent, "share of the rebuild's rate limit kept under load (a hardware controller's \
        rebuild rate; null = none)").reals(0.0, 100.0).nullable();
    CONTROLLER_REBUILD_DEPTH = Limit::new("array.controller.rebuild_depth", Always, Count,
        "rebuild units in flight at most while the rebuild is below its minimum")
        .ints(1, 256).or(Int(32));
    CONTROLLER_KIND = Limit::new("array.controller.kind", Preset, Choice,
        "what the controller is: a host bus adapter, a chipset's RAID, a RAID card or \
        software RAID (a preset key)").of(&["hba", "chipset", "hardware", "software"])
        .or(Str("hardware"));
    CONTROLLER_BBU = Limit::new("array.controller.bbu", Preset, Bool,
        "a battery or flash backup unit is fitted, so write-back keeps acknowledged writes \
        over a power loss (a preset key)").or(B(false));
    CONTROLLER_FORCE_WRITE_BACK = Limit::new("array.controller.force_write_back", Preset, Bool,
        "write-back without a backup unit, accepting the loss of acknowledged writes on \
        power loss (a preset key)").or(B(false));
    CONTROLLER_READ_AHEAD_WITHIN_STRIPE_UNIT = Limit::new(
        "array.controller.read_ahead_within_stripe_unit", Always, Bool,
        "read-ahead fills only the rest of the stripe unit a read ends in").or(B(false));

    UPLINK = Limit::new("array.controller.uplink", Always, Table,
        "a PCIe link some members share to the host (a chipset's DMI; null = none)").nullable();
    UPLINK_PCIE_GEN = Limit::new("array.controller.uplink.pcie_gen", Always, Count,
        "PCIe generation of the uplink").ints(1, 5);
    UPLINK_PCIE_LANES = Limit::new("array.controller.uplink.pcie_lanes", Always, Count,
        "lanes of the uplink (1, 2, 4, 8 or 16)").ints(1, 16);
    UPLINK_MAX_PAYLOAD = Limit::new("array.controller.uplink.pcie_max_payload_bytes", Always,
        Bytes, "largest data payload of one TLP on the uplink").ints(128, 4096).power_of_two()
        .or(Int(256));
    UPLINK_MEMBERS = Limit::new("array.controller.uplink.members", Always, Count,
        "members behind the uplink, the last ones (null = all)").ints(0, MEMBERS_MAX).nullable();
    UPLINK_COMPLETION_PAYLOAD = Limit::new("array.controller.uplink.pcie_completion_bytes",
        Always, Bytes, "data payload of each completion carrying the members' DMA reads \
        (their writes' data) over the uplink (null = pcie_max_payload_bytes)")
        .ints(64, 4096).power_of_two().nullable();
    UPLINK_UP_RATE_MAX = Limit::new("array.controller.uplink.up_rate_bytes_per_s_max", Always,
        Rate, "measured ceiling of the uplink's device-to-host direction, the members' reads \
        (null = the TLP arithmetic's rate)").reals(RATE_MIN, RATE_MAX).nullable();
    UPLINK_DOWN_RATE_MAX = Limit::new("array.controller.uplink.down_rate_bytes_per_s_max",
        Always, Rate, "measured ceiling of the uplink's host-to-device direction, the \
        members' writes (null = the completions' rate)").reals(RATE_MIN, RATE_MAX).nullable();

    HOST_REQUEST_OVERHEAD = Limit::new("array.host.request_overhead_ns", Always, Ns,
        "latency the host stack adds to each request").ints(0, NS_MAX).or(Int(0));
    HOST_SCHEDULER = Limit::new("array.host.scheduler", Always, Choice, "the I/O scheduler")
        .of(&["none", "mq-deadline", "bfq"]).or(Str("none"));
    HOST_QUEUE_DEPTH = Limit::new("array.host.queue_depth", Always, Count,
        "requests the array device takes at once").ints(1, IODEPTH_MAX).nullable();
    HOST_NR_REQUESTS = Limit::new("array.host.nr_requests", Always, Count,
        "requests the scheduler holds").ints(1, IODEPTH_MAX).nullable();
    HOST_MAX_SECTORS_KB = Limit::new("array.host.max_sectors_kb", Always, Kib,
        "largest merged request").ints(4, BLOCK_BYTES_MAX / 1024).nullable();
    HOST_DEADLINE = Limit::new("array.host.deadline", Always, Table, "mq-deadline's tunables")
        .nullable();
    DEADLINE_READ_EXPIRE = Limit::new("array.host.deadline.read_expire_ns", Always, Ns,
        "a read's deadline").ints(0, NS_MAX).or(Int(500_000_000));
    DEADLINE_WRITE_EXPIRE = Limit::new("array.host.deadline.write_expire_ns", Always, Ns,
        "a write's deadline").ints(0, NS_MAX).or(Int(5_000_000_000));
    DEADLINE_FIFO_BATCH = Limit::new("array.host.deadline.fifo_batch", Always, Count,
        "requests per sorted batch").ints(1, IODEPTH_MAX).or(Int(16));
    DEADLINE_WRITES_STARVED = Limit::new("array.host.deadline.writes_starved", Always, Count,
        "read batches while writes wait").ints(0, IODEPTH_MAX).or(Int(2));
    DEADLINE_FRONT_MERGES = Limit::new("array.host.deadline.front_merges", Always, Bool,
        "merge onto the front of a request").or(B(true));
    HOST_BFQ = Limit::new("array.host.bfq", Always, Table, "BFQ's tunables").nullable();
    BFQ_SLICE_IDLE = Limit::new("array.host.bfq.slice_idle_ns", Always, Ns,
        "idling for the process in service").ints(0, NS_MAX).or(Int(8_000_000));
    BFQ_TIMEOUT_SYNC = Limit::new("array.host.bfq.timeout_sync_ns", Always, Ns,
        "longest turn of one process").ints(1_000_000, NS_MAX).or(Int(125_000_000));
    BFQ_MAX_BUDGET = Limit::new("array.host.bfq.max_budget_bytes", Always, Bytes,
        "bytes served in one turn").ints(4096, BLOCK_BYTES_MAX).or(Int(16384 * 512));
    BFQ_FIFO_EXPIRE_SYNC = Limit::new("array.host.bfq.fifo_expire_sync_ns", Always, Ns,
        "age at which a request is served out of LBA order").ints(0, NS_MAX)
        .or(Int(125_000_000));

    WORKLOAD_KIND = Limit::new("workload.kind", Always, Choice,
        "fio-style jobs (the default) or a trace replay").of(&["jobs", "trace"]).or(Str("jobs"));
    RW_PATTERN = Limit::new("workload.rw", Jobs, Choice, "direction and pattern (fio's rw)").of(RW);
    BS = Limit::new("workload.bs", Jobs, Mix, "block-size mix: [[bytes, weight], ...]")
        .ints(BLOCK_BYTES_MIN, BLOCK_BYTES_MAX).multiple_of(SECTOR_BYTES).items(64);
    BS_WEIGHT = Limit::new("workload.bs.weight", Jobs, Count, "weight of one size in a mix")
        .ints(1, 1_000_000);
    RWMIXREAD = Limit::new("workload.rwmixread", Jobs, Count, "percent of reads in a mix")
        .ints(0, 100).or(Int(50));
    IODEPTH = Limit::new("workload.iodepth", Jobs, Count, "outstanding requests per job")
        .ints(1, IODEPTH_MAX);
    NUMJOBS = Limit::new("workload.numjobs", Jobs, Count, "independent jobs").ints(1, 1024)
        .or(Int(1));
    OFFSET = Limit::new("workload.offset_bytes", Jobs, Bytes, "start of the region")
        .at_least(0).multiple_of(SECTOR_BYTES).or(Int(0));
    SIZE = Limit::new("workload.size_bytes", Jobs, Bytes, "length of the region");
    IOS = Limit::new("workload.ios", Jobs, Count, "host I/Os measured after warm-up")
        .ints(1, IOS_MAX);
    WARMUP_IOS = Limit::new("workload.warmup_ios", Jobs, Count, "host I/Os discarded first")
        .ints(0, IOS_MAX).or(Int(0));
    RUNTIME = Limit::new("workload.runtime_ns", Jobs, Ns, "cap on measured simulated time")
        .at_least(1).nullable();
    DISTRIBUTION = Limit::new("workload.distribution", Jobs, Distribution,
        "offset distribution (fio's random_distribution)").or(Str("uniform"));
    JOB_NAME = Limit::new("workload.name", Jobs, Text, "job name, reported back").nullable();
    BS_WRITE = Limit::new("workload.bs_write", Jobs, Mix, "block-size mix for writes")
        .ints(BLOCK_BYTES_MIN, BLOCK_BYTES_MAX).multiple_of(SECTOR_BYTES).items(64).nullable();
    WARMUP_NS = Limit::new("workload.warmup_ns", Jobs, Ns, "simulated time discarded first")
        .or(Int(0));
    SAMPLE_INTERVAL = Limit::new("workload.sample_interval_ns", Jobs, Ns,
        "interval of the per-job samples").at_least(1_000_000).or(Int(500_000_000));

    TRACE_PATH = Limit::new("workload.path", Trace, Text, "the block trace file");
    TRACE_FORMAT = Limit::new("workload.format", Trace, Choice, "the trace's format")
        .of(&["msr", "blkparse"]);
    TRACE_MODE = Limit::new("workload.mode", Trace, Choice,
        "open: at the trace's timestamps; closed: iodepth outstanding")
        .of(&["open", "closed"]).or(Str("open"));
    TRACE_IODEPTH = Limit::new("workload.iodepth", Trace, Count,
        "outstanding requests in closed mode").ints(1, IODEPTH_MAX).or(Int(1));
    TRACE_TIME_SCALE = Limit::new("workload.time_scale", Trace, Number,
        "open mode: replay this many times faster").above(0.0).or(Real(1.0));
}

/// The fields declared directly under the table at `parent` for `scope`, in order.
pub fn fields_of(parent: &str, scope: Scope) -> impl Iterator<Item = &'static Limit> + '_ {
    LIMITS
        .iter()
        .filter(move |l| l.parent() == parent && l.applies(scope))
}

/// The limit of the field at `path` for `scope`, if the table declares one.
pub fn find(path: &str, scope: Scope) -> Option<&'static Limit> {
    LIMITS.iter().find(|l| l.path == path && l.applies(scope))
}

/// The whole table as JSON (`raidlab._native.limits()`): a list of limits, each with
/// `path`, `scope`, `kind`, `required`, `nullable`, `doc` and, where they apply, `min`,
/// `min_exclusive`, `max`, `multiple_of`, `power_of_two`, `choices`, `items_max` and
/// `default`.
pub fn limits_json() -> String {
    Value::Array(LIMITS.iter().map(Limit::to_json).collect()).to_string()
}
