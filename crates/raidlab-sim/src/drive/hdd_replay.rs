//! One hard disk replaying requests one at a time, each issued a think time after the
//! previous one completed: how DiskSim 4 replays a "validate" trace measured on a real
//! disk (`disksim_iodriver.c`: in validate mode the next request arrives at the
//! completion of the last plus the trace's inter-request time; `disksim_iotrace.c`,
//! `iotrace_validate_get_ioreq_event`). Its driver, buses and controller cost nothing
//! (the validation `.parv` files), so the drive's own time is each request's response
//! time: seek, rotation, media and link transfer, command overheads and the buffer,
//! all from `hdd`.

use super::hdd::Hdd;
use crate::scenario::{ArraySpec, DriveSpec, ScenarioError};

/// One request of a closed-loop replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayRequest {
    /// A write (else a read).
    pub write: bool,
    /// Where it starts on the drive.
    pub offset_bytes: u64,
    /// Its length.
    pub len_bytes: u64,
    /// Idle time between its completion and the next request's arrival.
    pub think_ns: u64,
}

/// Most requests one replay takes (its answer is one time per request).
pub const REPLAY_REQUESTS_MAX: usize = 10_000_000;

/// Replay `requests` one at a time on the single HDD of `array` (validated here; the
/// error names the field): the response time of each, in order.
pub fn replay_one_at_a_time(
    array: serde_json::Value,
    requests: &[ReplayRequest],
) -> Result<Vec<u64>, ScenarioError> {
    let (array, _) = ArraySpec::from_value(array)?;
    let DriveSpec::Hdd(spec) = &array.drive else {
        return Err(ScenarioError {
            field: "array.drive.kind".into(),
            message: "a replay one request at a time needs an hdd".into(),
        });
    };
    if requests.len() > REPLAY_REQUESTS_MAX {
        return Err(ScenarioError {
            field: "trace".into(),
            message: format!(
                "at most {REPLAY_REQUESTS_MAX} requests, got {}",
                requests.len()
            ),
        });
    }
    let capacity = spec.capacity_bytes;
    if let Some(i) = requests
        .iter()
        .position(|r| r.len_bytes == 0 || r.offset_bytes + r.len_bytes > capacity)
    {
        return Err(ScenarioError {
            field: format!("trace[{i}]"),
            message: format!("a request must be non-empty and end within the drive's {capacity} B"),
        });
    }
    let mut drive = Hdd::new(spec, array.controller.port_rate_bytes_per_s);
    Ok(replay_on(&mut drive, requests))
}

/// The replay itself on `drive` (idle at time 0).
pub fn replay_on(drive: &mut Hdd, requests: &[ReplayRequest]) -> Vec<u64> {
    let mut times = Vec::with_capacity(requests.len());
    let mut now_ns = 0;
    for (i, r) in requests.iter().enumerate() {
        let started = drive
            .submit(now_ns, i as u32, r.offset_bytes, r.len_bytes, r.write)
            .expect("an idle drive starts the request it is given");
        let done_ns = started.done_ns;
        debug_assert!(done_ns >= now_ns);
        let next = drive.complete(done_ns);
        debug_assert!(next.is_none(), "one request at a time");
        times.push(done_ns - now_ns);
        now_ns = done_ns + r.think_ns;
    }
    times
}
