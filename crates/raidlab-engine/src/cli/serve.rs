//! `serve`: assemble, resync what an unclean stop left dirty, then export over NBD and
//! answer the control socket until SIGINT or SIGTERM; flush and mark the array clean.
//!
//! The stop signal is process-wide, so one `serve` runs per process at a time. The
//! handlers are installed for the serve only and the previous ones put back after, so
//! a host process (Python, through `raidlab._native.engine_main`) keeps its own Ctrl-C
//! handling once the engine returns.

use super::flags::ServeArgs;
use super::open::{absolute, assemble, recover_unclean_stop};
use crate::cache::CachedArray;
use crate::net::nbd::export::Export;
use crate::net::nbd::server as nbd;
use crate::net::nbd::socket::Listener;
use crate::net::tls::{self, TlsMode, TlsServer};
use crate::net::{control, private_socket};
use crate::{Array, Error, Result};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Set by SIGINT/SIGTERM (and at the end of a serve): every serving thread polls it.
static STOP: AtomicBool = AtomicBool::new(false);
/// A serve is running in this process.
static SERVING: AtomicBool = AtomicBool::new(false);

/// `serve`.
pub fn serve(a: &ServeArgs) -> Result<i32> {
    if SERVING.swap(true, Ordering::SeqCst) {
        return Err(Error::Input(
            "serve: this process already serves an array".into(),
        ));
    }
    STOP.store(false, Ordering::SeqCst);
    let result = assemble_and_serve(a);
    SERVING.store(false, Ordering::SeqCst);
    result
}

/// Everything of `serve` but the one-per-process guard.
fn assemble_and_serve(a: &ServeArgs) -> Result<i32> {
    // Before the listener exists: a client (or a test) that sees the port open may
    // send SIGINT at once, and a signal that arrived before the handlers were in place
    // killed the process mid start-up instead of stopping the serve cleanly.
    let _signals = SignalHandlers::install();
    let tls = tls_server(a)?;
    refuse_tls_without_listen(a)?;
    let members = absolute(&a.array.members)?;
    let array = Arc::new(assemble(&members, &a.array)?);
    let control_socket = control::bind(array.status().uuid)?;
    let listeners = listeners(a, array.status().uuid, tls.as_ref())?;
    recover_unclean_stop(&array)?;
    let tier = cache_tier(a, &array)?;
    array.open_for_writes()?;
    tune_malloc();
    let control_thread = {
        let array = array.clone();
        std::thread::spawn(move || control::serve(array, control_socket, &STOP))
    };
    let mirror_control = match &tier {
        Some(t) => Some(serve_mirror_control(t)?),
        None => None,
    };
    let uris: Vec<String> = listeners.iter().map(|l| l.uri(&a.name)).collect();
    eprintln!(
        "raidlab-engine: serving {} B ({} {}) on {} (control socket {})",
        array.capacity_bytes(),
        array.geometry().level(),
        health(&array),
        uris.join(" and "),
        control::socket_path(array.status().uuid).display()
    );
    let cleaner = {
        let array = array.clone();
        let delay_s = a.bitmap_delay;
        std::thread::spawn(move || clean_bitmap_until_stop(&array, delay_s))
    };
    let export: Arc<dyn Export> = match &tier {
        Some(t) => t.clone(),
        None => array.clone(),
    };
    let served = nbd::serve_all(export, listeners, &serve_options(a, tls), &STOP);
    STOP.store(true, Ordering::SeqCst);
    let _ = control_thread.join();
    if let Some(t) = mirror_control {
        let _ = t.join();
    }
    let _ = cleaner.join();
    if let Some(t) = &tier {
        t.close()?;
    }
    array.close()?;
    served.map_err(|e| Error::Input(format!("serve: {e}")))?;
    let after = array.status();
    if after.dirty {
        // Regions a write left half done for lack of space could not be resynced (the
        // filesystem is still full): the superblocks say dirty, so the stop must not
        // say clean. The next serve resyncs them.
        eprintln!(
            "raidlab-engine: stopped, array {} but left dirty: {} region(s) a write left \
             half done could not be resynced (no space?); the next serve resyncs them",
            health(&array),
            after.dirty_regions
        );
        return Ok(1);
    }
    eprintln!("raidlab-engine: stopped, array {}", health(&array));
    Ok(0)
}

/// Where the export listens: on the Unix socket next to the control socket, bound by
/// the control socket's own rules (private directory, mode 0600, peers of another uid
/// refused, refused while another server answers there), unless `--listen` asks for
/// TCP; `--unix` with `--listen` keeps the Unix socket too. The local default is the
/// private socket: a TCP port on 127.0.0.1 is open to every local user.
fn listeners(a: &ServeArgs, uuid: u128, tls: Option<&TlsServer>) -> Result<Vec<Listener>> {
    let mut listeners = Vec::new();
    if let Some(addr) = &a.listen {
        let listener = TcpListener::bind(addr)
            .map_err(|e| Error::Input(format!("--listen: cannot listen on {addr}: {e}")))?;
        if let Ok(local) = listener.local_addr() {
            tls::warn_if_plain_on_network(local, tls.map_or(TlsMode::Off, |t| t.mode));
        }
        listeners.push(Listener::Tcp(listener));
    }
    if a.unix || a.listen.is_none() {
        let path = nbd_socket_path(uuid);
        let what = format!("the NBD export of array {uuid:032x}");
        let listener = private_socket::bind(&path, &what)?;
        listeners.push(Listener::Unix(listener, path));
    }
    Ok(listeners)
}

/// TLS is offered on TCP only (the Unix socket is private already): a TLS flag without
/// `--listen` is refused naming it, instead of being silently unused (after the TLS
/// flags' own checks, which say more about a flag that is wrong anyway).
fn refuse_tls_without_listen(a: &ServeArgs) -> Result<()> {
    if a.listen.is_some() {
        return Ok(());
    }
    let given = [
        ("--tls", a.tls.is_some_and(|m| m != TlsMode::Off)),
        ("--tls-cert", a.tls_cert.is_some()),
        ("--tls-key", a.tls_key.is_some()),
        ("--tls-psk", a.tls_psk.is_some()),
    ];
    match given.iter().find(|(_, set)| *set) {
        Some((flag, _)) => Err(Error::Input(format!(
            "{flag}: TLS is for the TCP export, which needs --listen ADDR (the default \
             export is the private Unix socket, which needs no TLS)"
        ))),
        None => Ok(()),
    }
}

/// The Unix socket of the NBD export of array `uuid`: `<uuid>.nbd` beside its control
/// socket (`<uuid>.sock`), in the same private directory.
pub fn nbd_socket_path(uuid: u128) -> std::path::PathBuf {
    control::socket_path(uuid).with_extension("nbd")
}

/// The cache tier of `--cache-members`, opened in front of `array` (its log replayed),
/// its mirror open for writes, its report in the array's status.
fn cache_tier(a: &ServeArgs, array: &Arc<Array>) -> Result<Option<Arc<CachedArray>>> {
    let Some(paths) = &a.array.cache_members else {
        if a.cache_trace.is_some() {
            return Err(Error::Input("--cache-trace: needs --cache-members".into()));
        }
        return Ok(None);
    };
    let tier = Arc::new(CachedArray::open(array.clone(), &absolute(paths)?)?);
    if let Some(path) = &a.cache_trace {
        tier.record_trace(path)?;
    }
    tier.open_for_writes()?;
    let weak = Arc::downgrade(&tier);
    array.set_cache_report(Box::new(move || weak.upgrade().map(|t| t.stats_json())));
    let (cached, dirty) = tier.occupancy();
    eprintln!(
        "raidlab-engine: cache tier ({}) on {} members: {cached} lines cached, {dirty} dirty",
        tier.policy().name(),
        paths.len()
    );
    Ok(Some(tier))
}

/// The cache mirror's own control socket (by its UUID): `status`, `fail` and
/// `replace` given the cache members reach it while the array is served.
fn serve_mirror_control(tier: &CachedArray) -> Result<std::thread::JoinHandle<()>> {
    let mirror = tier.with_mirror(Arc::clone);
    let socket = control::bind(mirror.status().uuid)?;
    Ok(std::thread::spawn(move || {
        control::serve(mirror, socket, &STOP)
    }))
}

/// The TLS of `--tls`, `--tls-cert`, `--tls-key` and `--tls-psk`: none for `--tls off`
/// (the default without a certificate or keys), loaded certificate and key, or keys,
/// for `on` (the default with them) and `required`.
fn tls_server(a: &ServeArgs) -> Result<Option<TlsServer>> {
    let given = a.tls_cert.is_some() || a.tls_key.is_some() || a.tls_psk.is_some();
    let mode = a
        .tls
        .unwrap_or(if given { TlsMode::On } else { TlsMode::Off });
    if let Some(keys) = &a.tls_psk {
        return psk_server(keys, mode);
    }
    match (mode, &a.tls_cert, &a.tls_key) {
        (TlsMode::Off, None, None) => Ok(None),
        (TlsMode::Off, _, _) => Err(Error::Input(
            "--tls: off, but --tls-cert/--tls-key given; drop them or say --tls on".into(),
        )),
        (_, Some(cert), Some(key)) => TlsServer::load(cert, key, mode)
            .map(Some)
            .map_err(Error::Input),
        (_, None, _) => Err(Error::Input(
            "--tls-cert: needed with --tls on/required and --tls-key (a PEM certificate chain)"
                .into(),
        )),
        (_, _, None) => Err(Error::Input(
            "--tls-key: needed with --tls-cert (the certificate's PEM private key)".into(),
        )),
    }
}

/// The TLS of `--tls-psk` (pre-shared keys, OpenSSL), with `--tls on` or `required`.
fn psk_server(keys: &std::path::Path, mode: TlsMode) -> Result<Option<TlsServer>> {
    if mode == TlsMode::Off {
        return Err(Error::Input(
            "--tls: off, but --tls-psk given; drop it or say --tls on".into(),
        ));
    }
    #[cfg(feature = "psk")]
    return TlsServer::load_psk(keys, mode)
        .map(Some)
        .map_err(Error::Input);
    #[cfg(not(feature = "psk"))]
    return Err(Error::Input(format!(
        "--tls-psk: this raidlab-engine was built without the psk feature (OpenSSL); \
         cannot use {}",
        keys.display()
    )));
}

/// glibc's malloc thresholds fixed for serving: the NBD budget keeps its request
/// buffers for reuse instead of freeing them, so glibc's dynamic thresholds stay at
/// their start (128 KiB) and the array's per-request staging buffers (hundreds of KiB)
/// were trimmed and faulted in again on every request: twice the CPU per 1 MiB RAID 5
/// read (perf: page faults in memset under `Staged::zeroed`). Up to 4 MiB comes from
/// the heap and 16 MiB of free heap top stays mapped, what glibc's dynamic thresholds
/// settle at once a buffer of that size has been freed. Process-wide and left as set
/// (harmless for a host interpreter).
///
/// Those thresholds hold per arena, and glibc gives threads up to 8 arenas per core:
/// with a connection's threads spread over 16 of them, each kept its freed buffers (up
/// to 16 MiB of free top), uncounted by the budget: a flood of 1 MiB WRITE_ZEROES under
/// a 64 MiB budget peaked at 121-126 MiB (144 MiB with 16 arenas forced). So the
/// threads share [`ARENAS_MAX`] arenas (72-78 MiB), unless `MALLOC_ARENA_MAX` is set.
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets glibc's malloc parameters.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 16 << 20);
        if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
            libc::mallopt(libc::M_ARENA_MAX, ARENAS_MAX);
        }
    }
}

/// glibc malloc arenas the serving threads share at most (see [`tune_malloc`]).
const ARENAS_MAX: i32 = 2;

/// The NBD server's options from `serve`'s flags.
fn serve_options(a: &ServeArgs, tls: Option<TlsServer>) -> nbd::ServeOptions {
    nbd::ServeOptions {
        connections_max: a.connections_max,
        handshakes_max: a.handshakes_max,
        requests_in_flight: a.requests_in_flight,
        handshake_timeout: Duration::from_secs(a.handshake_timeout),
        idle_timeout: a.idle_timeout.map(Duration::from_secs),
        evict_idle_after: Duration::from_secs(a.evict_idle_after),
        io_timeout: Duration::from_secs(a.io_timeout),
        memory_limit_bytes: a.memory_limit,
        export_name: a.name.clone(),
        tls: tls.map(Arc::new),
    }
}

/// `clean` or `degraded`, as the ready and stopped lines say it.
fn health(array: &Array) -> &'static str {
    if array.failed().is_empty() {
        "clean"
    } else {
        "degraded"
    }
}

/// Every `delay_s` seconds until [`STOP`], clears the bitmap bits of regions no longer
/// written (md's bitmap daemon, mdadm's `--delay`).
fn clean_bitmap_until_stop(array: &Array, delay_s: u64) {
    let tick = Duration::from_millis(100);
    let mut waited = Duration::ZERO;
    while !STOP.load(Ordering::Relaxed) {
        std::thread::sleep(tick);
        waited += tick;
        if waited.as_secs() >= delay_s {
            waited = Duration::ZERO;
            if let Err(e) = array.clean_bitmap() {
                eprintln!("raidlab-engine: clearing the write-intent bitmap: {e}");
            }
        }
    }
}

/// The SIGINT/SIGTERM handler: only an atomic store, which is async-signal-safe.
extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// SIGINT and SIGTERM stop the serve cleanly while this lives; dropped, the previous
/// handlers (the default, or a host interpreter's) are back.
struct SignalHandlers {
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl SignalHandlers {
    const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

    fn install() -> Self {
        let mut previous = Vec::with_capacity(Self::SIGNALS.len());
        for signal in Self::SIGNALS {
            // SAFETY: `on_signal` only stores to an atomic, which is async-signal-safe;
            // both structs are plain data, zeroed then filled as sigaction(2) expects.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, &action, &mut old) == 0 {
                    previous.push((signal, old));
                }
            }
        }
        Self { previous }
    }
}

impl Drop for SignalHandlers {
    fn drop(&mut self) {
        for (signal, old) in &self.previous {
            // SAFETY: `old` is what sigaction(2) returned for this signal.
            unsafe {
                libc::sigaction(*signal, old, std::ptr::null_mut());
            }
        }
    }
}
