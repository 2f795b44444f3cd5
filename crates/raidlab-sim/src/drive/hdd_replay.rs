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

#[cfg(test)]
mod tests {
    //! The DiskSim-level mechanisms, each timed by hand on a drive of round numbers:
    //! 6000 rpm (a 10 ms revolution), 100 sectors a track (100 us a sector), two
    //! surfaces, nothing else costing time unless the test gives it.
    use super::*;
    use crate::scenario::{HddSpec, ReadAheadScheme};

    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;
    const TRACK: u64 = 100 * 512;

    fn drive() -> HddSpec {
        let mut spec = HddSpec::example();
        spec.rpm = 6000;
        spec.capacity_bytes = 1000 * 2 * TRACK;
        spec.command_overhead_ns = 0;
        spec.link_rate_bytes_per_s = 1e12;
        spec.read_ahead_bytes = 0;
        let m = &mut spec.mechanics;
        m.surfaces = Some(2);
        m.zone_first_cylinder = vec![0];
        m.zone_last_cylinder = vec![999];
        m.zone_sectors_per_track = vec![100];
        m.zone_track_skew_sectors = vec![0];
        m.zone_cylinder_skew_sectors = vec![0];
        m.seek_table_cylinders = vec![1, 1000];
        m.seek_table_ns = vec![MS, 10 * MS];
        spec
    }

    fn read(offset_bytes: u64, len_bytes: u64) -> ReplayRequest {
        ReplayRequest {
            write: false,
            offset_bytes,
            len_bytes,
            think_ns: 0,
        }
    }

    fn times(spec: &HddSpec, requests: &[ReplayRequest]) -> Vec<u64> {
        replay_on(&mut Hdd::new(spec, 1e12), requests)
    }

    /// `a` within a microsecond of `b` (the link's last sector, rounding).
    fn near(a: u64, b: u64) -> bool {
        a.abs_diff(b) <= US
    }

    #[test]
    fn a_head_switch_that_outlasts_the_wait_costs_a_revolution() {
        // Sector 0 (done at 0.1 ms), then the sector half a turn round on the other
        // surface of the cylinder: after 1 ms of head switch it comes under the head at
        // 5 ms and is read by 5.1 ms; 6 ms of switch misses it until 15 ms.
        let reqs = [read(0, 512), read(TRACK + 50 * 512, 512)];
        let mut spec = drive();
        spec.mechanics.head_switch_ns = Some(MS);
        let t = times(&spec, &reqs);
        assert!(near(t[0], 100 * US) && near(t[1], 5 * MS), "{t:?}");
        spec.mechanics.head_switch_ns = Some(6 * MS);
        let t = times(&spec, &reqs);
        assert!(near(t[1], 15 * MS), "{t:?}");
    }

    #[test]
    fn a_write_settles_before_it_waits_for_its_sector() {
        // Sector 50 of the next cylinder: 1 ms of seek, then its sector at 5 ms; 6 ms
        // of settle after the seek miss it until 15 ms.
        let mut spec = drive();
        spec.write_cache = false;
        let w = ReplayRequest {
            write: true,
            offset_bytes: 2 * TRACK + 50 * 512,
            len_bytes: 512,
            think_ns: 0,
        };
        assert!(near(times(&spec, &[w])[0], 5 * MS + 100 * US));
        spec.mechanics.write_settle_ns = Some(6 * MS);
        assert!(near(times(&spec, &[w])[0], 15 * MS + 100 * US));
    }

    #[test]
    fn a_write_that_stays_on_its_track_does_not_settle() {
        // DiskSim adds the write settle to a seek or head switch, never to none
        // (mech_g1.c, dm_seek_time_g1: `if((result != 0) && (rw == 0))`). A read of
        // sector 0 leaves the head on track 0; a write of sector 50 there waits only
        // for its sector (5 ms after 0.1) however long the settle.
        let mut spec = drive();
        spec.write_cache = false;
        spec.mechanics.write_settle_ns = Some(6 * MS);
        let w = ReplayRequest {
            write: true,
            offset_bytes: 50 * 512,
            len_bytes: 512,
            think_ns: 0,
        };
        let t = times(&spec, &[read(0, 512), w]);
        assert!(near(t[1], 4_900 * US + 100 * US), "{t:?}");
    }

    #[test]
    fn a_transfer_across_a_track_boundary_pays_the_track_skew() {
        // Sectors 99 and 100: 9.9 ms to reach 99, then 99, 10 sectors of skew, 100.
        let mut spec = drive();
        spec.mechanics.zone_track_skew_sectors = vec![10];
        let t = times(&spec, &[read(99 * 512, 1024)]);
        assert!(near(t[0], 9_900 * US + 1_200 * US), "{t:?}");
    }

    #[test]
    fn the_measured_seek_table_sets_the_seek() {
        // 500 cylinders away (1000 tracks): the table gives 1 + 499/999 x 9 ms = 5.5 ms,
        // and the sector at angle 0 comes round at 10 ms.
        let t = times(&drive(), &[read(1000 * TRACK, 512)]);
        assert!(near(t[0], 10 * MS + 100 * US), "{t:?}");
        let t = times(&drive(), &[read(1000 * TRACK + 60 * 512, 512)]);
        assert!(near(t[0], 6 * MS + 100 * US), "{t:?}");
    }

    #[test]
    fn overheads_follow_the_command_before() {
        // Cached writes: overhead, then one sector over a 5.12 MB/s link (100 us).
        let mut spec = drive();
        spec.write_cache = true;
        spec.link_rate_bytes_per_s = 5.12e6;
        spec.mechanics.overhead_ns_write_hit_after_read = Some(300 * US);
        spec.mechanics.overhead_ns_write_hit_after_write = Some(500 * US);
        let w = |sector: u64| ReplayRequest {
            write: true,
            offset_bytes: sector * 512,
            len_bytes: 512,
            think_ns: 20 * MS,
        };
        let t = replay_on(&mut Hdd::new(&spec, 1e12), &[w(0), w(5000)]);
        assert!(near(t[0], 400 * US) && near(t[1], 600 * US), "{t:?}");
    }

    #[test]
    fn a_segmented_buffer_keeps_an_earlier_stream() {
        // A, then B far away, then A again: one stream forgets A, two segments keep it.
        let mut spec = drive();
        spec.read_ahead_bytes = 64 * 512;
        let reqs = [read(0, 4096), read(500 * TRACK, 4096), read(0, 4096)];
        let one = times(&spec, &reqs);
        spec.mechanics.cache_segments = Some(2);
        let two = times(&spec, &reqs);
        assert!(one[2] > MS, "{one:?}");
        assert!(two[2] < 10 * US, "{two:?}");
    }

    #[test]
    fn a_read_of_cached_write_data_is_a_buffer_hit_when_the_drive_allows_it() {
        // A cached write far from the head, then a read of its data 20 ms later:
        // DiskSim's "Allow read hits on write data" = 1 serves it from the buffer,
        // = 0 sends it to the platter.
        let mut spec = drive();
        spec.write_cache = true;
        spec.mechanics.cache_segments = Some(2);
        let w = ReplayRequest {
            write: true,
            offset_bytes: 500 * TRACK,
            len_bytes: 4096,
            think_ns: 20 * MS,
        };
        let reqs = [w, read(500 * TRACK, 4096)];
        let allowed = times(&spec, &reqs);
        assert!(allowed[1] < 10 * US, "{allowed:?}");
        spec.mechanics.read_hits_on_write_data = Some(false);
        let refused = times(&spec, &reqs);
        assert!(refused[1] > 100 * US, "{refused:?}");
    }

    #[test]
    fn a_track_read_ahead_stops_at_the_end_of_the_track() {
        let mut spec = drive();
        spec.read_ahead_bytes = 1 << 20;
        spec.mechanics.read_ahead_scheme = Some(ReadAheadScheme::Track);
        let think = |r: ReplayRequest| ReplayRequest {
            think_ns: 30 * MS,
            ..r
        };
        // After sector 0, the rest of its track is in the buffer; the next track is not.
        let t = times(&spec, &[think(read(0, 512)), read(99 * 512, 512)]);
        assert!(t[1] < 10 * US, "{t:?}");
        let t = times(&spec, &[think(read(0, 512)), read(TRACK, 512)]);
        assert!(t[1] > 100 * US, "{t:?}");
    }
}
