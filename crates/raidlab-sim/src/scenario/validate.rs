//! Checking a scenario: first every field on its own against the table of
//! [`limits`] (walked over the scenario's JSON, so the table is the check), then the
//! rules that tie fields together. Every refusal names the field's path.

use serde_json::{json, Map, Value};

use super::limits::{self, refuse, Fallback, Kind, Scope};
use super::{
    ArraySpec, DriveSpec, HostSpec, Level, RawScenario, Scenario, ScenarioError, SchedulerKind,
    TraceSpec, WorkloadSpec,
};
use raidlab_layout::Level as LayoutLevel;

fn error(field: &str, message: impl std::fmt::Display) -> ScenarioError {
    ScenarioError {
        field: field.to_string(),
        message: message.to_string(),
    }
}

impl Scenario {
    /// The fio-style workloads to run: `workload`, or every entry of `workloads`
    /// (none for a trace replay).
    pub fn workload_specs(&self) -> Vec<&WorkloadSpec> {
        self.workload.iter().chain(&self.workloads).collect()
    }

    /// Parse JSON and validate; the error names the field.
    pub fn from_json(text: &str) -> Result<Self, ScenarioError> {
        let value: Value = serde_json::from_str(text).map_err(|e| error("scenario", e))?;
        Self::from_value(value)
    }

    /// Validate a scenario given as a JSON value and build it; the error names the
    /// field.
    pub fn from_value(value: Value) -> Result<Self, ScenarioError> {
        check_fields(&value)?;
        let raw: RawScenario = serde_json::from_value(value).map_err(|e| error("scenario", e))?;
        let scenario = Scenario::try_from(raw)?;
        scenario.check_rules()?;
        Ok(scenario)
    }

    /// Check every bound the simulator relies on: each field against
    /// [`limits::LIMITS`], then the rules between fields.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        check_fields(&serde_json::to_value(self).expect("a scenario serialises"))?;
        self.check_rules()
    }

    /// Check the array alone; returns its geometry.
    pub fn validate_array(&self) -> Result<raidlab_layout::Geometry, ScenarioError> {
        self.array.validate()
    }

    fn check_rules(&self) -> Result<(), ScenarioError> {
        let layout = self.array.check_rules()?;
        super::cache::check_scenario(self)?;
        if let Some(trace) = &self.trace {
            if !self.workloads.is_empty() {
                refuse(
                    "workloads",
                    "a trace replays alone: give either a trace `workload` or `workloads`".into(),
                )?;
            }
            return trace.check_file();
        }
        self.check_workloads(&layout)
    }

    fn check_workloads(&self, layout: &raidlab_layout::Geometry) -> Result<(), ScenarioError> {
        let specs = self.workload_specs();
        if specs.is_empty() {
            refuse(
                "workload",
                "a scenario needs `workload` or `workloads`".into(),
            )?;
        }
        if self.workload.is_some() && !self.workloads.is_empty() {
            refuse(
                "workloads",
                "give either `workload` or `workloads`, not both".into(),
            )?;
        }
        for (i, w) in specs.iter().enumerate() {
            let field = |name: &str| {
                if self.workload.is_some() {
                    format!("workload.{name}")
                } else {
                    format!("workloads[{i}].{name}")
                }
            };
            check_workload(w, layout, &field)?;
        }
        Ok(())
    }
}

impl ArraySpec {
    /// Check the array: each field against [`limits::LIMITS`], then the rules between
    /// them (the level's drive count, layout, copies and spans; the seek figures in
    /// order; failed members that exist and leave the data readable; ...). Returns the
    /// geometry. Errors name the field's path (`array.drive_count`).
    pub fn validate(&self) -> Result<raidlab_layout::Geometry, ScenarioError> {
        let value = serde_json::to_value(self).expect("an array serialises");
        let Value::Object(map) = &value else {
            unreachable!("an array serialises to an object")
        };
        walk_table(map, "array", "array", Scope::Always)?;
        self.check_rules()
    }

    /// Validate an `array` object given as JSON (every field against the table, then
    /// the rules) and build it with its geometry; the error names the field's path.
    pub fn from_value(value: Value) -> Result<(Self, raidlab_layout::Geometry), ScenarioError> {
        let Value::Object(map) = &value else {
            return Err(error("array", format!("expected a table, got {value}")));
        };
        walk_table(map, "array", "array", Scope::Always)?;
        let array: ArraySpec = serde_json::from_value(value).map_err(|e| error("array", e))?;
        let layout = array.check_rules()?;
        Ok((array, layout))
    }

    /// The layout geometry this array describes; the error names the field.
    pub fn geometry(&self) -> Result<raidlab_layout::Geometry, ScenarioError> {
        use raidlab_layout::{ArraySpec as Spec, Geometry, Layout};
        let refused = |e: raidlab_layout::LayoutError| ScenarioError {
            field: match e.field {
                "capacity_bytes" | "member_capacity_bytes" => "array.drive.capacity_bytes".into(),
                field => format!("array.{field}"),
            },
            message: e.message,
        };
        let mut spec = Spec::new(
            scenario_level(&self.level)?,
            self.drive_count,
            self.stripe_unit_bytes,
            self.drive.capacity_bytes(),
        );
        if let Some(name) = &self.layout {
            spec = spec.with_layout(name.parse::<Layout>().map_err(refused)?);
        }
        if let Some(copies) = self.copies {
            spec = spec.with_copies(copies);
        }
        if let Some(spans) = self.spans {
            spec = spec.with_spans(spans);
        }
        Geometry::new(&spec).map_err(refused)
    }

    fn check_rules(&self) -> Result<raidlab_layout::Geometry, ScenarioError> {
        check_drive(&self.drive)?;
        check_controller(self)?;
        check_host(&self.host)?;
        if self.stripe_unit_bytes > self.drive.capacity_bytes() {
            refuse(
                "array.stripe_unit_bytes",
                format!(
                    "larger than one drive's capacity ({} B), got {} B",
                    self.drive.capacity_bytes(),
                    self.stripe_unit_bytes
                ),
            )?;
        }
        let layout = self.geometry()?;
        self.check_failed(&layout)?;
        Ok(layout)
    }

    fn check_failed(&self, layout: &raidlab_layout::Geometry) -> Result<(), ScenarioError> {
        for (i, &m) in self.failed.iter().enumerate() {
            if m >= self.drive_count {
                refuse(
                    "array.failed",
                    format!(
                        "member {m} does not exist: members are 0..{}",
                        self.drive_count
                    ),
                )?;
            }
            if self.failed[..i].contains(&m) {
                refuse("array.failed", format!("member {m} is listed twice"))?;
            }
        }
        let failed = raidlab_layout::MemberSet::from_members(&self.failed);
        if !layout.tolerates(&failed) {
            use raidlab_layout::Level as L;
            // Only RAID 10 (with fewer copies than drives) and RAID 50/60 survive more
            // failures in some placements than in every one; saying so of RAID 0 or 5
            // would promise what no placement gives.
            let placements = match layout.level() {
                L::Raid50 | L::Raid60 => ", more when they fall in different spans",
                L::Raid10 if layout.copies() < self.drive_count => {
                    ", more when no chunk loses all its copies"
                }
                _ => "",
            };
            refuse(
                "array.failed",
                format!(
                    "{} of {} drives loses data with members {failed} failed (it survives {} \
                     failure(s) in every case{placements})",
                    layout.level(),
                    self.drive_count,
                    layout.tolerated_failures()
                ),
            )?;
        }
        if let Some(r) = &self.rebuild {
            if !self.failed.contains(&r.member) {
                refuse(
                    "array.rebuild.member",
                    format!(
                        "member {} is not failed; failed: {:?}",
                        r.member, self.failed
                    ),
                )?;
            }
            if r.failed_at_ns.is_some() && self.spares == 0 {
                refuse(
                    "array.rebuild.failed_at_ns",
                    "a rebuild that starts at the failure needs a hot spare (array.spares \
                     at least 1); without one the replacement arrives after the run"
                        .into(),
                )?;
            }
        }
        Ok(())
    }
}

/// The layout crate's level of a scenario's `level` (a number, or `"concat"`).
pub fn scenario_level(level: &Level) -> Result<LayoutLevel, ScenarioError> {
    let name = match level {
        Level::Number(n) => n.to_string(),
        Level::Name(name) => name.clone(),
    };
    let known = limits::LEVEL.choices.contains(&name.as_str())
        && (name == "concat") == matches!(level, Level::Name(_));
    if !known {
        return Err(error(
            "array.level",
            format!(
                "must be one of {}, got {name:?}",
                limits::LEVEL.choices.join(", ")
            ),
        ));
    }
    name.parse()
        .map_err(|e: raidlab_layout::LayoutError| error("array.level", e.message))
}

/// The level rules a front end needs, from the layout crate (`raidlab._native.levels()`):
/// one entry per level with `level` (as the scenario names it), `name`, `members_min`,
/// `members_max`, `span_members_min`, `layouts` (md's default first), `default_layout`,
/// `copies` (takes `copies`), `copies_default`, `spans` (takes `spans`), `spans_min`,
/// `span_level`, `parity` (parity blocks per stripe) and `mirror`.
pub fn levels_json() -> String {
    let levels: Vec<Value> = LayoutLevel::ALL
        .iter()
        .map(|&level| {
            let spans_min = if level.takes_spans() {
                limits::SPANS_MIN as u32
            } else {
                1
            };
            let scenario_name: Value = match level {
                LayoutLevel::Concat => json!("concat"),
                _ => json!(level.name()["RAID ".len()..]
                    .parse::<u32>()
                    .expect("a numbered level")),
            };
            json!({
                "level": scenario_name,
                "name": level.name(),
                "members_min": level.span_members_min() * spans_min,
                "members_max": raidlab_layout::MEMBERS_MAX,
                "span_members_min": level.span_members_min(),
                "layouts": level.layouts().iter().map(|l| l.name()).collect::<Vec<_>>(),
                "default_layout": level.default_layout().map(|l| l.name()),
                "copies": level.takes_copies(),
                "copies_default": level.takes_copies().then_some(raidlab_layout::COPIES_DEFAULT),
                "spans": level.takes_spans(),
                "spans_min": spans_min,
                "span_level": level.span_level().map(|l| l.name()),
                "parity": level.parity_per_stripe(),
                "mirror": matches!(level, LayoutLevel::Raid1 | LayoutLevel::Raid10),
            })
        })
        .collect();
    Value::Array(levels).to_string()
}

/// Check one value of the field at `path` on its own, as the scenario would be checked
/// (`scope`: the drive or workload kind it belongs to); the error names `path`. A
/// front end calls this for values it parses before it has a whole scenario (a fio
/// job file's `iodepth`, a suite's queue depth), so even those bounds are the table's.
pub fn check_field(path: &str, scope: Scope, value: &Value) -> Result<(), ScenarioError> {
    let Some(limit) = limits::find(path, scope) else {
        return refuse(path, format!("no such field (scope {})", scope.name()));
    };
    check_value(limit, value, path, scope)
}

/// Check the preset keys of a controller table (`kind`, `bbu`, `force_write_back`, as
/// [`limits::LIMITS`] declares them in scope `preset`) and the rule they make with its
/// `write_back`: as MegaRAID and PERC firmware do, write-back is refused without a
/// battery or flash backup unit, since a power loss would lose acknowledged writes,
/// unless forced. A key left out takes its default; other keys are not looked at.
pub fn check_controller_preset(table: &Value) -> Result<(), ScenarioError> {
    let Value::Object(map) = table else {
        return refuse("array.controller", format!("expected a table, got {table}"));
    };
    let flag = |limit: &limits::Limit| -> Result<bool, ScenarioError> {
        match map.get(limit.key()) {
            None => Ok(matches!(limit.default, limits::Fallback::Bool(true))),
            Some(value) => {
                check_value(limit, value, limit.path, Scope::Preset)?;
                Ok(value.as_bool() == Some(true))
            }
        }
    };
    if let Some(kind) = map.get(limits::CONTROLLER_KIND.key()) {
        let limit = &limits::CONTROLLER_KIND;
        check_value(limit, kind, limit.path, Scope::Preset)?;
    }
    let bbu = flag(&limits::CONTROLLER_BBU)?;
    let forced = flag(&limits::CONTROLLER_FORCE_WRITE_BACK)?;
    let write_back = map.get("write_back").and_then(Value::as_bool) == Some(true);
    // A tuned table (the front end's --write-cache) carries its cache and FastPath too:
    // the same rule the scenario's controller is held to, asked before the run.
    if map.contains_key("cache_bytes") || map.contains_key("fastpath") {
        let cache_bytes = map.get("cache_bytes").and_then(Value::as_u64).unwrap_or(0);
        let fastpath = map.get("fastpath").and_then(Value::as_bool) == Some(true);
        check_write_policy(write_back, cache_bytes, fastpath)?;
    }
    if write_back && !bbu && !forced {
        refuse(
            "array.controller.write_back",
            "write-back needs a battery/flash backup unit (bbu = true); set \
             force_write_back = true to accept losing acknowledged writes on power loss"
                .into(),
        )?;
    }
    Ok(())
}

/// The write policy's own rule, one owner for the scenario's controller and the front
/// end's tuning: write-back needs a cache to hold the writes it acknowledges, and
/// FastPath (LSI MegaRAID, Dell PERC) bypasses the cache, so it needs write-through.
fn check_write_policy(
    write_back: bool,
    cache_bytes: u64,
    fastpath: bool,
) -> Result<(), ScenarioError> {
    if write_back && cache_bytes == 0 {
        refuse(
            "array.controller.cache_bytes",
            "the controller has no cache; write-back needs one of at least 1 MiB".into(),
        )?;
    }
    if write_back && cache_bytes < WRITE_BACK_CACHE_BYTES_MIN {
        refuse(
            "array.controller.cache_bytes",
            format!("write-back needs a cache of at least 1 MiB, got {cache_bytes}"),
        )?;
    }
    if write_back && fastpath {
        refuse(
            "array.controller.fastpath",
            "FastPath needs write-through: write_back must be false".into(),
        )?;
    }
    Ok(())
}

// --- the table walk ------------------------------------------------------------------

/// Check every field of a scenario document against [`limits::LIMITS`].
fn check_fields(root: &Value) -> Result<(), ScenarioError> {
    let Value::Object(map) = root else {
        return refuse("scenario", format!("expected a JSON object, got {root}"));
    };
    walk_table(map, "", "", Scope::Always)
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// Check the fields of the table declared at `table` (shown as `field` in errors).
fn walk_table(
    map: &Map<String, Value>,
    table: &str,
    field: &str,
    scope: Scope,
) -> Result<(), ScenarioError> {
    for (key, value) in map {
        let path = join(table, key);
        if path == "array.cache" {
            super::cache::check_cache(value, &join(field, key))?;
            continue;
        }
        let Some(limit) = limits::find(&path, scope) else {
            let allowed: Vec<&str> = limits::fields_of(table, scope).map(|l| l.key()).collect();
            return refuse(
                &join(field, key),
                format!("unknown key {key:?}; allowed: {}", allowed.join(", ")),
            );
        };
        check_value(limit, value, &join(field, key), scope)?;
    }
    for limit in limits::fields_of(table, scope) {
        if limit.default == Fallback::Required && !map.contains_key(limit.key()) {
            refuse(
                &join(field, limit.key()),
                format!("is required ({})", limit.doc),
            )?;
        }
    }
    Ok(())
}

fn check_value(
    limit: &limits::Limit,
    value: &Value,
    field: &str,
    scope: Scope,
) -> Result<(), ScenarioError> {
    if value.is_null() && limit.nullable {
        return Ok(());
    }
    match limit.kind {
        Kind::Table => {
            let Value::Object(map) = value else {
                return refuse(
                    field,
                    format!("expected a table (JSON object), got {value}"),
                );
            };
            let scope = table_scope(limit.path, map, field, scope)?;
            walk_table(map, limit.path, field, scope)
        }
        Kind::Tables => {
            let items = list(limit, value, field)?;
            let table = limit.path.trim_end_matches('s');
            for (i, item) in items.iter().enumerate() {
                let item_field = format!("{field}[{i}]");
                let Value::Object(map) = item else {
                    return refuse(&item_field, format!("expected a table, got {item}"));
                };
                let scope = table_scope(table, map, &item_field, scope)?;
                if scope == Scope::Trace {
                    refuse(
                        &format!("{item_field}.kind"),
                        "a trace replays alone: give it as `workload`".into(),
                    )?;
                }
                walk_table(map, table, &item_field, scope)?;
            }
            Ok(())
        }
        Kind::Mix => check_mix(limit, value, field),
        Kind::Members | Kind::Ints => {
            for item in list(limit, value, field)? {
                limit.check(item, field)?;
            }
            Ok(())
        }
        Kind::Distribution => check_distribution_shape(value, field),
        _ => limit.check(value, field),
    }
}

/// The scope of a table's fields: a drive's or a workload's `kind`; others inherit.
fn table_scope(
    table: &str,
    map: &Map<String, Value>,
    field: &str,
    inherited: Scope,
) -> Result<Scope, ScenarioError> {
    let kind = map.get("kind");
    let kind_field = join(field, "kind");
    match table {
        "array.drive" => match kind.and_then(Value::as_str) {
            Some("hdd") => Ok(Scope::Hdd),
            Some("ssd") => Ok(Scope::Ssd),
            Some("nvme") => Ok(Scope::Nvme),
            _ => {
                let kind = kind.unwrap_or(&Value::Null);
                limits::DRIVE_KIND.check(kind, &kind_field)?;
                unreachable!("a drive kind that is not hdd, ssd or nvme was accepted")
            }
        },
        "workload" => match kind {
            None => Ok(Scope::Jobs),
            Some(kind) => {
                limits::WORKLOAD_KIND.check(kind, &kind_field)?;
                Ok(if kind == "trace" {
                    Scope::Trace
                } else {
                    Scope::Jobs
                })
            }
        },
        _ => Ok(inherited),
    }
}

fn list<'v>(
    limit: &limits::Limit,
    value: &'v Value,
    field: &str,
) -> Result<&'v Vec<Value>, ScenarioError> {
    let Value::Array(items) = value else {
        return Err(error(field, format!("expected a list, got {value}")));
    };
    if let Some(max) = limit.items_max {
        if items.len() as u64 > max {
            refuse(field, format!("at most {max} entries, got {}", items.len()))?;
        }
    }
    Ok(items)
}

/// A block-size mix: 1..=`items_max` pairs of a size within the mix's bounds and a
/// weight within `workload.bs.weight`'s, each size once.
fn check_mix(limit: &limits::Limit, value: &Value, field: &str) -> Result<(), ScenarioError> {
    let items = list(limit, value, field)?;
    if items.is_empty() {
        refuse(field, "needs at least one block size".into())?;
    }
    let mut sizes = Vec::with_capacity(items.len());
    for item in items {
        let pair = item.as_array().filter(|pair| pair.len() == 2);
        let Some(pair) = pair else {
            return refuse(field, format!("entries are [bytes, weight], got {item}"));
        };
        limit.check(&pair[0], field).map_err(|e| ScenarioError {
            message: format!("block size {}", e.message.trim_start_matches("must be ")),
            ..e
        })?;
        limits::BS_WEIGHT
            .check(&pair[1], field)
            .map_err(|e| ScenarioError {
                message: format!("weight {}", e.message.trim_start_matches("must be ")),
                ..e
            })?;
        let size = pair[0].as_u64().unwrap_or(0);
        if sizes.contains(&size) {
            refuse(
                field,
                format!("size {} appears twice", limits::show_bytes(size)),
            )?;
        }
        sizes.push(size);
    }
    Ok(())
}

/// `"uniform"`, `{"zipf": theta}`, `{"pareto": h}`, `{"normal": sigma_percent}` or
/// `{"zoned": [[access_percent, size_percent], ...]}`; the parameters' ranges are a rule.
fn check_distribution_shape(value: &Value, field: &str) -> Result<(), ScenarioError> {
    let shaped = match value {
        Value::String(name) => name == "uniform",
        Value::Object(map) if map.len() == 1 => match map.iter().next() {
            Some((name, param)) if ["zipf", "pareto", "normal"].contains(&name.as_str()) => {
                param.is_number()
            }
            Some((name, Value::Array(zones))) if name == "zoned" => zones.iter().all(|z| {
                z.as_array()
                    .is_some_and(|z| z.len() == 2 && z.iter().all(Value::is_number))
            }),
            _ => false,
        },
        _ => false,
    };
    if shaped {
        return Ok(());
    }
    refuse(
        field,
        format!(
            "must be \"uniform\", {{\"zipf\": theta}}, {{\"pareto\": h}}, {{\"normal\": \
             sigma_percent}} or {{\"zoned\": [[access_percent, size_percent], ...]}}, got {value}"
        ),
    )
}

// --- rules between fields ------------------------------------------------------------

/// Minimum controller cache for write-back: 1 MiB.
const WRITE_BACK_CACHE_BYTES_MIN: u64 = 1 << 20;

fn check_drive(drive: &DriveSpec) -> Result<(), ScenarioError> {
    match drive {
        DriveSpec::Hdd(h) => {
            if !(h.seek_ns_track_to_track <= h.seek_ns_avg
                && h.seek_ns_avg <= h.seek_ns_full_stroke)
            {
                refuse(
                    "array.drive.seek_ns_avg",
                    "seek figures must satisfy track-to-track <= average <= full stroke".into(),
                )?;
            }
            if h.media_rate_bytes_per_s_inner > h.media_rate_bytes_per_s_outer {
                refuse(
                    "array.drive.media_rate_bytes_per_s_inner",
                    "the inner zone cannot be faster than the outer zone".into(),
                )?;
            }
            if h.write_buffer_bytes.is_some_and(|b| b > h.cache_bytes) {
                refuse(
                    "array.drive.write_buffer_bytes",
                    format!("must fit in cache_bytes ({} B)", h.cache_bytes),
                )?;
            }
            if h.read_ahead_bytes > h.cache_bytes {
                refuse(
                    "array.drive.read_ahead_bytes",
                    format!("must fit in cache_bytes ({} B)", h.cache_bytes),
                )?;
            }
            check_hdd_mechanics(h)?;
        }
        DriveSpec::Ssd(s) => {
            if s.write_buffer_bytes < s.page_bytes {
                refuse(
                    "array.drive.write_buffer_bytes",
                    format!("must hold at least one page ({} B)", s.page_bytes),
                )?;
            }
        }
        DriveSpec::Nvme(n) => {
            check_pcie_lanes(n.pcie_lanes, "array.drive.pcie_lanes")?;
            if n.write_buffer_bytes < n.page_bytes {
                refuse(
                    "array.drive.write_buffer_bytes",
                    format!("must hold at least one page ({} B)", n.page_bytes),
                )?;
            }
        }
    }
    Ok(())
}

/// The DiskSim-level HDD keys agree with each other: a zone table's five lists have an
/// entry per zone, its cylinders ascend without overlap and hold the capacity; a seek
/// table's two lists pair up with ascending distances; segments fit in the buffer.
fn check_hdd_mechanics(h: &super::HddSpec) -> Result<(), ScenarioError> {
    check_zone_table(h)?;
    check_seek_table(&h.mechanics)?;
    check_cache_segments(h)
}

/// A zone table's five lists have an entry per zone; its cylinders ascend without
/// overlap, its skews stay below a track, and its sectors hold the capacity.
fn check_zone_table(h: &super::HddSpec) -> Result<(), ScenarioError> {
    let m = &h.mechanics;
    let zones = m.zone_first_cylinder.len();
    let lists = [
        ("zone_last_cylinder", m.zone_last_cylinder.len()),
        ("zone_sectors_per_track", m.zone_sectors_per_track.len()),
        ("zone_track_skew_sectors", m.zone_track_skew_sectors.len()),
        (
            "zone_cylinder_skew_sectors",
            m.zone_cylinder_skew_sectors.len(),
        ),
    ];
    for (key, len) in lists {
        if len != zones {
            refuse(
                &format!("array.drive.{key}"),
                format!("the zone table needs one entry per zone: {zones} in zone_first_cylinder, {len} here"),
            )?;
        }
    }
    let mut sectors = 0u64;
    let mut next_cylinder = 0;
    let surfaces = u64::from(m.surfaces.unwrap_or(1));
    for i in 0..zones {
        let (first, last) = (m.zone_first_cylinder[i], m.zone_last_cylinder[i]);
        if first < next_cylinder || last < first {
            refuse(
                &format!("array.drive.zone_first_cylinder[{i}]"),
                format!("zones must ascend without overlap: cylinders {first}..={last} after {next_cylinder}"),
            )?;
        }
        next_cylinder = last + 1;
        let spt = m.zone_sectors_per_track[i];
        sectors += (last + 1 - first) * surfaces * spt;
        if m.zone_track_skew_sectors[i] >= spt || m.zone_cylinder_skew_sectors[i] >= spt {
            refuse(
                &format!("array.drive.zone_track_skew_sectors[{i}]"),
                format!("a skew must be below the zone's {spt} sectors per track"),
            )?;
        }
    }
    if zones > 0 && sectors * 512 < h.capacity_bytes {
        refuse(
            "array.drive.zone_first_cylinder",
            format!(
                "the zone table holds {} B, less than capacity_bytes ({} B)",
                sectors * 512,
                h.capacity_bytes
            ),
        )?;
    }
    Ok(())
}

/// A seek table's distances and times pair up, the distances ascending.
fn check_seek_table(m: &super::HddMechanicsSpec) -> Result<(), ScenarioError> {
    let (d, t) = (&m.seek_table_cylinders, &m.seek_table_ns);
    if d.len() != t.len() {
        refuse(
            "array.drive.seek_table_ns",
            format!(
                "needs one time per distance: {} distances, {} times",
                d.len(),
                t.len()
            ),
        )?;
    }
    if d.windows(2).any(|w| w[0] >= w[1]) {
        refuse(
            "array.drive.seek_table_cylinders",
            "distances must ascend".into(),
        )?;
    }
    Ok(())
}

/// The drive's cache segments fit in its buffer.
fn check_cache_segments(h: &super::HddSpec) -> Result<(), ScenarioError> {
    let m = &h.mechanics;
    let segments = u64::from(m.cache_segments.unwrap_or(1));
    if m.cache_segment_bytes.unwrap_or(0) * segments > h.cache_bytes {
        refuse(
            "array.drive.cache_segment_bytes",
            format!(
                "{segments} segments must fit in cache_bytes ({} B)",
                h.cache_bytes
            ),
        )?;
    }
    Ok(())
}

/// A PCIe link has 1, 2, 4, 8 or 16 lanes.
fn check_pcie_lanes(lanes: u32, field: &str) -> Result<(), ScenarioError> {
    if crate::drive::pcie::PCIE_LANES.contains(&lanes) {
        return Ok(());
    }
    refuse(
        field,
        format!("a PCIe link has 1, 2, 4, 8 or 16 lanes, got {lanes}"),
    )
}

fn check_controller(a: &ArraySpec) -> Result<(), ScenarioError> {
    let c = &a.controller;
    if let Some(uplink) = &c.uplink {
        check_pcie_lanes(uplink.pcie_lanes, "array.controller.uplink.pcie_lanes")?;
        if uplink.members.is_some_and(|m| m > a.drive_count) {
            refuse(
                "array.controller.uplink.members",
                format!(
                    "at most the array's {} members sit behind the uplink, got {}",
                    a.drive_count,
                    uplink.members.unwrap_or(0)
                ),
            )?;
        }
    }
    check_write_policy(c.write_back, c.cache_bytes, c.fastpath)?;
    if c.fastpath {
        if c.fastpath_overhead_ns.is_none() {
            refuse(
                "array.controller.fastpath",
                "this controller has no FastPath (fastpath_overhead_ns is not set)".into(),
            )?;
        }
        if c.read_ahead_bytes > 0 {
            refuse(
                "array.controller.fastpath",
                "FastPath needs no read-ahead: read_ahead_bytes must be 0".into(),
            )?;
        }
    }
    Ok(())
}

fn check_host(h: &HostSpec) -> Result<(), ScenarioError> {
    let refused = |table: &str, owner: SchedulerKind| {
        refuse(
            &format!("array.host.{table}"),
            format!(
                "sets {} tunables but the scheduler is {}; use scheduler {} or drop the table",
                owner.name(),
                h.scheduler.name(),
                owner.name()
            ),
        )
    };
    if h.deadline.is_some() && h.scheduler != SchedulerKind::MqDeadline {
        refused("deadline", SchedulerKind::MqDeadline)?;
    }
    if h.bfq.is_some() && h.scheduler != SchedulerKind::Bfq {
        refused("bfq", SchedulerKind::Bfq)?;
    }
    Ok(())
}

fn check_workload(
    w: &WorkloadSpec,
    layout: &raidlab_layout::Geometry,
    field: &dyn Fn(&str) -> String,
) -> Result<(), ScenarioError> {
    let bs_max =
        w.bs.iter()
            .chain(w.bs_write.iter().flatten())
            .map(|b| b.0)
            .max()
            .unwrap_or(0);
    if w.offset_bytes >= layout.capacity_bytes() {
        refuse(
            &field("offset_bytes"),
            format!(
                "must be below the array's capacity ({} B), got {}",
                layout.capacity_bytes(),
                w.offset_bytes
            ),
        )?;
    }
    let region_end = w.offset_bytes.checked_add(w.size_bytes);
    if region_end.is_none_or(|end| end > layout.capacity_bytes()) {
        refuse(
            &field("size_bytes"),
            format!(
                "the region must end inside the array ({} B), got {} B at offset {} B",
                layout.capacity_bytes(),
                w.size_bytes,
                w.offset_bytes
            ),
        )?;
    }
    if w.size_bytes / u64::from(w.numjobs.max(1)) < bs_max {
        refuse(
            &field("size_bytes"),
            format!("each job's share must hold the largest block ({bs_max} B)"),
        )?;
    }
    check_distribution(&w.distribution, &field("distribution"))
}

fn check_distribution(d: &super::Distribution, field: &str) -> Result<(), ScenarioError> {
    use super::Distribution;
    match d {
        Distribution::Uniform => Ok(()),
        Distribution::Zipf(theta) if theta.is_finite() && *theta > 0.0 => Ok(()),
        Distribution::Pareto(h) if *h > 0.0 && *h < 1.0 => Ok(()),
        Distribution::Normal(sigma) if sigma.is_finite() && *sigma > 0.0 => Ok(()),
        Distribution::Zoned(zones)
            if !zones.is_empty()
                && zones.iter().all(|z| z.0 >= 0.0 && z.1 > 0.0)
                && (zones.iter().map(|z| z.0).sum::<f64>() - 100.0).abs() < 1e-6
                && (zones.iter().map(|z| z.1).sum::<f64>() - 100.0).abs() < 1e-6 =>
        {
            Ok(())
        }
        other => refuse(
            field,
            format!(
                "zipf needs theta > 0, pareto h in (0, 1), normal sigma > 0, zoned access and \
                 size percentages each adding to 100; got {other:?}"
            ),
        ),
    }
}

impl TraceSpec {
    /// The trace file exists, is a file, and its first request reads in `format`
    /// (a file that exists but is not such a trace is told apart from a missing one).
    fn check_file(&self) -> Result<(), ScenarioError> {
        // The field names the file (the front end names it by the path the user gave),
        // so the messages say only what is wrong with it.
        let field = "workload.path";
        let path = std::path::Path::new(&self.path);
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return refuse(field, "no such trace file".into());
            }
            Err(e) => return refuse(field, format!("cannot read the trace: {e}")),
        };
        if path.is_dir() {
            return refuse(field, "is a directory, not a trace file".into());
        }
        let format = self.format.name();
        let input = std::io::BufReader::new(file);
        let mut reader = crate::trace::Reader::new(input, self.format.reader_format());
        match reader.next_record() {
            Ok(Some(_)) => Ok(()),
            Ok(None) => refuse(field, format!("holds no {format} trace records")),
            Err(e) => refuse(field, format!("is not a {format} trace: {e}")),
        }
    }
}
