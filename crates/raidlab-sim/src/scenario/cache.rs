//! The `[cache]` table of a scenario and its checks: what the cache tier is asked to
//! be, apart from how it runs ([`crate::tier`]).
//!
//! Scenario validation asks these checks, so they import only the scenario and the
//! policy crate, never the event loop the tier runs: validating a scenario does not
//! reach the simulator.

use super::{ArraySpec, Scenario, ScenarioError, TraceMode};
use raidlab_cache::{CacheConfig, Policy};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `[cache]` table: the policy, its parameters and the cache's own SSD array.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSpec {
    /// `raidix`, `lru`, `smq` or `bcache`.
    pub policy: String,
    /// The cache's SSD array (any level; no cache of its own).
    pub array: ArraySpec,
    /// Cache bytes used; default the cache array's capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_bytes: Option<u64>,
    /// Cache line; default 4 KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_bytes: Option<u64>,
    /// raidix region; default a sixteenth of the capacity, at most 1 GiB
    /// ([`region_bytes_default`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region_bytes: Option<u64>,
    /// raidix share of regions for the RRC, percent; default 50.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rrc_share_pct: Option<u32>,
    /// raidix: a random read is admitted on this touch; default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rrc_admit_touches: Option<u32>,
    /// raidix: random writes shorter than this enter the RWC; default 32 KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwc_write_max_bytes: Option<u64>,
    /// Ghost (and smq hotspot) queue entries; default one per line, at most 4 Mi.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ghost_entries_max: Option<u64>,
    /// bcache's sequential cutoff; default 4 MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential_cutoff_bytes: Option<u64>,
}

pub use raidlab_cache::region_bytes_default;

fn refused(field: String, message: impl std::fmt::Display) -> ScenarioError {
    ScenarioError {
        field,
        message: message.to_string(),
    }
}

impl CacheSpec {
    /// The policy's configuration for a cache array of `array_capacity_bytes`; errors
    /// name the field under `field` (the table's path).
    pub fn config(
        &self,
        array_capacity_bytes: u64,
        field: &str,
    ) -> Result<CacheConfig, ScenarioError> {
        let names: Vec<&str> = Policy::ALL.iter().map(|p| p.name()).collect();
        let policy = Policy::from_name(&self.policy).ok_or_else(|| {
            refused(
                format!("{field}.policy"),
                format!("must be one of {}, got {:?}", names.join(", "), self.policy),
            )
        })?;
        let capacity = self.capacity_bytes.unwrap_or(array_capacity_bytes);
        if capacity > array_capacity_bytes {
            return Err(refused(
                format!("{field}.capacity_bytes"),
                format!("at most the cache array's capacity, {array_capacity_bytes} bytes; got {capacity}"),
            ));
        }
        let mut c = CacheConfig::new(policy, capacity);
        if let Some(v) = self.line_bytes {
            c.line_bytes = v;
            c.ghost_entries_max = (capacity / v.max(1)).clamp(1, 4 << 20);
        }
        c.region_bytes = self
            .region_bytes
            .unwrap_or_else(|| region_bytes_default(capacity, c.line_bytes));
        c.rrc_share_pct = self.rrc_share_pct.unwrap_or(c.rrc_share_pct);
        c.rrc_admit_touches = self.rrc_admit_touches.unwrap_or(c.rrc_admit_touches);
        c.rwc_write_max_bytes = self.rwc_write_max_bytes.unwrap_or(c.rwc_write_max_bytes);
        c.ghost_entries_max = self.ghost_entries_max.unwrap_or(c.ghost_entries_max);
        c.sequential_cutoff_bytes = self
            .sequential_cutoff_bytes
            .unwrap_or(c.sequential_cutoff_bytes);
        c.validate().map_err(|e| {
            if e.field == "region_bytes" && self.region_bytes.is_none() {
                // The region follows the capacity: what the tier cannot hold is a cache
                // smaller than a region (of one line at least) for each area.
                return refused(
                    format!("{field}.capacity_bytes"),
                    format!(
                        "at least {} bytes for raidix (a region of one {}-byte line for \
                         each of the read and write areas); got {capacity}",
                        2 * c.line_bytes,
                        c.line_bytes
                    ),
                );
            }
            let key = match e.field {
                "capacity_bytes" if self.capacity_bytes.is_none() => "array",
                other => other,
            };
            refused(format!("{field}.{key}"), e.allowed)
        })?;
        Ok(c)
    }
}

/// Check the `[cache]` table at `field` (`array.cache`): its keys, its array (errors
/// under `field.array`) and the policy's parameters.
pub fn check_cache(value: &Value, field: &str) -> Result<(), ScenarioError> {
    let Value::Object(map) = value else {
        return Err(refused(
            field.into(),
            format!("expected a table, got {value}"),
        ));
    };
    let Some(array) = map.get("array") else {
        return Err(refused(
            format!("{field}.array"),
            "is required (the cache's SSD array)",
        ));
    };
    if array.get("cache").is_some() {
        return Err(refused(
            format!("{field}.array.cache"),
            "a cache array has no cache of its own",
        ));
    }
    let (_, geometry) = ArraySpec::from_value(array.clone())
        .map_err(|e| refused(format!("{field}.{}", e.field), e.message))?;
    let spec: CacheSpec =
        serde_json::from_value(value.clone()).map_err(|e| refused(field.into(), e))?;
    spec.config(geometry.capacity_bytes(), field).map(|_| ())
}

/// Rules between a cache and the rest of the scenario.
pub fn check_scenario(scenario: &Scenario) -> Result<(), ScenarioError> {
    if scenario.array.cache.is_none() {
        return Ok(());
    }
    if let Some(trace) = &scenario.trace {
        // Traced discards never reach the tier: the readers skip them (blkparse's `D`
        // requests, MSR's types other than Read and Write are refused).
        if trace.mode != TraceMode::Closed {
            return Err(refused(
                "workload.mode".into(),
                "a cache tier replays a trace in closed mode (its arrays run closed \
                 loops at the trace's iodepth); got open",
            ));
        }
        return Ok(());
    }
    for (i, w) in scenario.workload_specs().iter().enumerate() {
        if w.rw.trims() {
            return Err(refused(
                format!("workloads[{i}].rw"),
                "a cache tier takes reads and writes; discards run without [cache]",
            ));
        }
    }
    Ok(())
}
