//! Every foreign call of the daemon: libqb's IPC server (and its client, for tests and tools),
//! libbz2's buffer (de)compression and the user database. Nothing else in the crate is unsafe.
//!
//! The server runs libqb's own main loop on the calling thread; the callbacks reach the Rust
//! [`Service`] through a thread-local, and a panic in the service is caught so that it never
//! unwinds into C (the message is dropped, the daemon goes on).
#![allow(unsafe_code)]

use std::cell::{Cell, RefCell};
use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;

// ---------------------------------------------------------------- libbz2

#[link(name = "bz2")]
unsafe extern "C" {
    fn BZ2_bzBuffToBuffCompress(
        dest: *mut c_char,
        dest_len: *mut c_uint,
        source: *mut c_char,
        source_len: c_uint,
        block_size_100k: c_int,
        verbosity: c_int,
        work_factor: c_int,
    ) -> c_int;
    fn BZ2_bzBuffToBuffDecompress(
        dest: *mut c_char,
        dest_len: *mut c_uint,
        source: *mut c_char,
        source_len: c_uint,
        small: c_int,
        verbosity: c_int,
    ) -> c_int;
}

/// libbz2's "everything went well" code.
const BZ_OK: c_int = 0;

/// Compresses `source` as one bzip2 stream (the `.bz2` file format); `None` when the result
/// would not fit in `max_len` bytes or libbz2 refuses.
pub fn bz2_compress(source: &[u8], max_len: usize) -> Option<Vec<u8>> {
    let source_len = c_uint::try_from(source.len()).ok()?;
    let mut dest = vec![0u8; max_len];
    let mut dest_len = c_uint::try_from(max_len).unwrap_or(c_uint::MAX);
    // The source is only read, but the C prototype is not const.
    let mut input = source.to_vec();
    // SAFETY: dest has dest_len writable bytes, input has source_len readable bytes; both
    // buffers live across the call and libbz2 keeps no pointer after it returns.
    let rc = unsafe {
        BZ2_bzBuffToBuffCompress(
            dest.as_mut_ptr().cast(),
            &mut dest_len,
            input.as_mut_ptr().cast(),
            source_len,
            4,
            0,
            20,
        )
    };
    if rc != BZ_OK {
        return None;
    }
    dest.truncate(dest_len as usize);
    Some(dest)
}

/// Decompresses one bzip2 stream into at most `max_len` bytes; the libbz2 code on failure (an
/// output longer than `max_len` is `BZ_OUTBUFF_FULL`, -8).
pub fn bz2_decompress(source: &[u8], max_len: usize) -> Result<Vec<u8>, i32> {
    let source_len = c_uint::try_from(source.len()).map_err(|_| -8)?;
    let mut dest_len = c_uint::try_from(max_len).map_err(|_| -8)?;
    let mut dest = vec![0u8; max_len];
    let mut input = source.to_vec();
    // SAFETY: as in bz2_compress: both buffers are valid for the lengths passed and outlive
    // the call; libbz2 checks the stream and never writes past dest_len.
    let rc = unsafe {
        BZ2_bzBuffToBuffDecompress(
            dest.as_mut_ptr().cast(),
            &mut dest_len,
            input.as_mut_ptr().cast(),
            source_len,
            0,
            0,
        )
    };
    if rc != BZ_OK {
        return Err(rc);
    }
    dest.truncate(dest_len as usize);
    Ok(dest)
}

// ---------------------------------------------------------------- users

/// The uid and primary gid of a user, from the system's user database.
pub fn user_ids(name: &str) -> Option<(u32, u32)> {
    let name = CString::new(name).ok()?;
    // SAFETY: name is a valid NUL-terminated string; getpwnam returns NULL or a pointer to a
    // static record that we read immediately, on this thread, before any other getpw* call.
    unsafe {
        let pw = libc::getpwnam(name.as_ptr());
        if pw.is_null() {
            None
        } else {
            Some(((*pw).pw_uid, (*pw).pw_gid))
        }
    }
}

/// The effective uid of this process.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

// ---------------------------------------------------------------- libqb

#[repr(C)]
struct QbLoop {
    _opaque: [u8; 0],
}
#[repr(C)]
struct QbIpcsService {
    _opaque: [u8; 0],
}
/// One client connection of the server (opaque).
#[repr(C)]
pub struct QbIpcsConnection {
    _opaque: [u8; 0],
}
#[repr(C)]
struct QbIpccConnection {
    _opaque: [u8; 0],
}

type DispatchFn = extern "C" fn(fd: i32, revents: i32, data: *mut c_void) -> i32;
type JobFn = extern "C" fn(data: *mut c_void);
type SignalFn = extern "C" fn(signal: i32, data: *mut c_void) -> i32;

#[repr(C)]
struct PollHandlers {
    job_add: extern "C" fn(prio: c_int, data: *mut c_void, f: JobFn) -> i32,
    dispatch_add:
        extern "C" fn(prio: c_int, fd: i32, evts: i32, data: *mut c_void, f: DispatchFn) -> i32,
    dispatch_mod:
        extern "C" fn(prio: c_int, fd: i32, evts: i32, data: *mut c_void, f: DispatchFn) -> i32,
    dispatch_del: extern "C" fn(fd: i32) -> i32,
}

#[repr(C)]
struct ServiceHandlers {
    connection_accept: Option<extern "C" fn(*mut QbIpcsConnection, u32, u32) -> i32>,
    connection_created: Option<extern "C" fn(*mut QbIpcsConnection)>,
    msg_process: Option<extern "C" fn(*mut QbIpcsConnection, *mut c_void, usize) -> i32>,
    connection_closed: Option<extern "C" fn(*mut QbIpcsConnection) -> i32>,
    connection_destroyed: Option<extern "C" fn(*mut QbIpcsConnection)>,
}

/// libqb's `QB_IPC_NATIVE` (shared memory on Linux).
const QB_IPC_NATIVE: c_int = 4;
const QB_LOOP_HIGH: c_int = 2;

#[link(name = "qb")]
unsafe extern "C" {
    fn qb_loop_create() -> *mut QbLoop;
    fn qb_loop_run(l: *mut QbLoop);
    fn qb_loop_stop(l: *mut QbLoop);
    fn qb_loop_destroy(l: *mut QbLoop);
    fn qb_loop_poll_add(
        l: *mut QbLoop,
        p: c_int,
        fd: i32,
        events: i32,
        data: *mut c_void,
        f: DispatchFn,
    ) -> i32;
    fn qb_loop_poll_mod(
        l: *mut QbLoop,
        p: c_int,
        fd: i32,
        events: i32,
        data: *mut c_void,
        f: DispatchFn,
    ) -> i32;
    fn qb_loop_poll_del(l: *mut QbLoop, fd: i32) -> i32;
    fn qb_loop_job_add(l: *mut QbLoop, p: c_int, data: *mut c_void, f: JobFn) -> i32;
    fn qb_loop_signal_add(
        l: *mut QbLoop,
        p: c_int,
        sig: i32,
        data: *mut c_void,
        f: SignalFn,
        handle: *mut *mut c_void,
    ) -> i32;

    fn qb_ipcs_create(
        name: *const c_char,
        service_id: i32,
        kind: c_int,
        handlers: *mut ServiceHandlers,
    ) -> *mut QbIpcsService;
    fn qb_ipcs_poll_handlers_set(s: *mut QbIpcsService, handlers: *mut PollHandlers);
    fn qb_ipcs_enforce_buffer_size(s: *mut QbIpcsService, max_buf_size: u32);
    fn qb_ipcs_run(s: *mut QbIpcsService) -> i32;
    fn qb_ipcs_destroy(s: *mut QbIpcsService);
    fn qb_ipcs_response_send(c: *mut QbIpcsConnection, data: *const c_void, size: usize) -> isize;
    fn qb_ipcs_event_send(c: *mut QbIpcsConnection, data: *const c_void, size: usize) -> isize;
    fn qb_ipcs_connection_auth_set(c: *mut QbIpcsConnection, uid: u32, gid: u32, mode: u32);

    fn qb_ipcc_connect(name: *const c_char, max_msg_size: usize) -> *mut QbIpccConnection;
    fn qb_ipcc_send(c: *mut QbIpccConnection, msg: *const c_void, len: usize) -> isize;
    fn qb_ipcc_recv(c: *mut QbIpccConnection, msg: *mut c_void, len: usize, ms: i32) -> isize;
    fn qb_ipcc_event_recv(c: *mut QbIpccConnection, msg: *mut c_void, len: usize, ms: i32)
    -> isize;
    fn qb_ipcc_disconnect(c: *mut QbIpccConnection);
}

/// What the server sends back for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outgoing {
    /// On the response channel (the reply a synchronous client waits for, e.g. an ack).
    Response(Vec<u8>),
    /// On the event channel (Pacemaker's daemons send their replies this way).
    Event(Vec<u8>),
}

/// The daemon's side of the server: who may connect, and what a message is answered with.
pub trait Service {
    /// Whether a client with these credentials may connect.
    fn accept(&mut self, uid: u32, gid: u32) -> bool;
    /// The answers to one message (its bytes, header included).
    fn message(&mut self, data: &[u8]) -> Vec<Outgoing>;
    /// A message could not be delivered (the client left, or its queue stayed full).
    fn send_failed(&mut self, what: &str, rc: isize);
}

thread_local! {
    static LOOP: Cell<*mut QbLoop> = const { Cell::new(ptr::null_mut()) };
    static SERVICE: RefCell<Option<Box<dyn Service>>> = const { RefCell::new(None) };
}

fn current_loop() -> *mut QbLoop {
    LOOP.with(Cell::get)
}

extern "C" fn job_add(prio: c_int, data: *mut c_void, f: JobFn) -> i32 {
    // SAFETY: the loop pointer was created by qb_loop_create on this thread and stays valid
    // until serve() returns, after the service (the only caller) has been destroyed.
    unsafe { qb_loop_job_add(current_loop(), prio, data, f) }
}

extern "C" fn dispatch_add(
    prio: c_int,
    fd: i32,
    evts: i32,
    data: *mut c_void,
    f: DispatchFn,
) -> i32 {
    // SAFETY: as in job_add; fd, data and f come from libqb and are passed back unchanged.
    unsafe { qb_loop_poll_add(current_loop(), prio, fd, evts, data, f) }
}

extern "C" fn dispatch_mod(
    prio: c_int,
    fd: i32,
    evts: i32,
    data: *mut c_void,
    f: DispatchFn,
) -> i32 {
    // SAFETY: as in dispatch_add.
    unsafe { qb_loop_poll_mod(current_loop(), prio, fd, evts, data, f) }
}

extern "C" fn dispatch_del(fd: i32) -> i32 {
    // SAFETY: as in job_add.
    unsafe { qb_loop_poll_del(current_loop(), fd) }
}

extern "C" fn on_signal(_signal: i32, _data: *mut c_void) -> i32 {
    // SAFETY: as in job_add; stopping makes qb_loop_run return in serve().
    unsafe { qb_loop_stop(current_loop()) };
    0
}

/// Runs `f` on the service, catching a panic (None then, or when no service is set).
fn with_service<T>(f: impl FnOnce(&mut dyn Service) -> T) -> Option<T> {
    SERVICE.with(|cell| {
        let mut guard = cell.try_borrow_mut().ok()?;
        let service = guard.as_mut()?;
        catch_unwind(AssertUnwindSafe(|| f(service.as_mut()))).ok()
    })
}

extern "C" fn on_accept(c: *mut QbIpcsConnection, uid: u32, gid: u32) -> i32 {
    if with_service(|s| s.accept(uid, gid)) != Some(true) {
        return -libc::EPERM;
    }
    if uid != 0 {
        // SAFETY: c is the connection libqb is accepting; u32::MAX is chown's "unchanged".
        // Gives the client's group read/write access to the connection's shared memory.
        unsafe { qb_ipcs_connection_auth_set(c, u32::MAX, gid, 0o660) };
    }
    0
}

extern "C" fn on_message(c: *mut QbIpcsConnection, data: *mut c_void, size: usize) -> i32 {
    if data.is_null() {
        return 0;
    }
    // SAFETY: libqb hands us `size` readable bytes at `data`, valid for this callback only;
    // the slice does not outlive it.
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
    let out = with_service(|s| s.message(bytes)).unwrap_or_default();
    for o in out {
        send(c, &o);
    }
    0
}

/// How often an event is retried while the client's queue is full, 10 ms apart.
const EVENT_RETRIES: usize = 500;

fn send(c: *mut QbIpcsConnection, o: &Outgoing) {
    let (bytes, what) = match o {
        Outgoing::Response(b) => (b, "response"),
        Outgoing::Event(b) => (b, "event"),
    };
    let mut rc: isize = 0;
    for _ in 0..EVENT_RETRIES {
        // SAFETY: c is the connection of the current callback (valid while it runs); bytes
        // is a complete message, header first, and libqb copies it before returning.
        rc = unsafe {
            match o {
                Outgoing::Response(_) => {
                    qb_ipcs_response_send(c, bytes.as_ptr().cast(), bytes.len())
                }
                Outgoing::Event(_) => qb_ipcs_event_send(c, bytes.as_ptr().cast(), bytes.len()),
            }
        };
        if rc != -(libc::EAGAIN as isize) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    if rc < 0 || (rc as usize) < bytes.len() {
        with_service(|s| s.send_failed(what, rc));
    }
}

extern "C" fn on_closed(_c: *mut QbIpcsConnection) -> i32 {
    0
}

extern "C" fn on_destroyed(_c: *mut QbIpcsConnection) {}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("invalid IPC service name {0:?}")]
    Name(String),
    #[error("libqb could not create its main loop")]
    Loop,
    #[error("libqb could not create the IPC server {0:?}")]
    Create(String),
    #[error("libqb could not start the IPC server {name:?}: errno {errno}")]
    Run { name: String, errno: i32 },
}

/// Serves the libqb IPC service `name` until SIGTERM or SIGINT, every client buffer at least
/// `buffer_size` bytes, answering with `service`.
pub fn serve(name: &str, buffer_size: u32, service: Box<dyn Service>) -> Result<(), ServeError> {
    let cname = CString::new(name).map_err(|_| ServeError::Name(name.to_string()))?;
    // SAFETY: qb_loop_create has no preconditions; NULL is checked.
    let l = unsafe { qb_loop_create() };
    if l.is_null() {
        return Err(ServeError::Loop);
    }
    LOOP.with(|c| c.set(l));
    SERVICE.with(|c| *c.borrow_mut() = Some(service));
    let result = run_server(l, &cname, name, buffer_size);
    SERVICE.with(|c| *c.borrow_mut() = None);
    LOOP.with(|c| c.set(ptr::null_mut()));
    // SAFETY: l came from qb_loop_create and nothing uses it any more (the server is gone).
    unsafe { qb_loop_destroy(l) };
    result
}

fn run_server(
    l: *mut QbLoop,
    cname: &CStr,
    name: &str,
    buffer_size: u32,
) -> Result<(), ServeError> {
    let mut handlers = ServiceHandlers {
        connection_accept: Some(on_accept),
        connection_created: None,
        msg_process: Some(on_message),
        connection_closed: Some(on_closed),
        connection_destroyed: Some(on_destroyed),
    };
    let mut poll = PollHandlers {
        job_add,
        dispatch_add,
        dispatch_mod,
        dispatch_del,
    };
    // SAFETY: cname is NUL-terminated; libqb copies both handler tables into the service, and
    // they outlive it anyway (the service is destroyed before this function returns).
    let s = unsafe { qb_ipcs_create(cname.as_ptr(), 0, QB_IPC_NATIVE, &mut handlers) };
    if s.is_null() {
        return Err(ServeError::Create(name.to_string()));
    }
    // SAFETY: s is the live service just created; l is this thread's loop (see job_add).
    let rc = unsafe {
        qb_ipcs_enforce_buffer_size(s, buffer_size);
        qb_ipcs_poll_handlers_set(s, &mut poll);
        for sig in [libc::SIGTERM, libc::SIGINT] {
            qb_loop_signal_add(
                l,
                QB_LOOP_HIGH,
                sig,
                ptr::null_mut(),
                on_signal,
                ptr::null_mut(),
            );
        }
        qb_ipcs_run(s)
    };
    if rc < 0 {
        // SAFETY: s is live and not yet destroyed.
        unsafe { qb_ipcs_destroy(s) };
        return Err(ServeError::Run {
            name: name.to_string(),
            errno: -rc,
        });
    }
    // SAFETY: runs until on_signal stops the loop; then s is destroyed exactly once.
    unsafe {
        qb_loop_run(l);
        qb_ipcs_destroy(s);
    }
    Ok(())
}

/// A libqb IPC client connection (tests and tools; Pacemaker's controller is the real client).
pub struct Client {
    conn: *mut QbIpccConnection,
}

impl Client {
    /// Connects to the service `name` with buffers of `max_msg_size` bytes; the errno on failure.
    pub fn connect(name: &str, max_msg_size: usize) -> Result<Client, i32> {
        let cname = CString::new(name).map_err(|_| libc::EINVAL)?;
        // SAFETY: cname is NUL-terminated; NULL (with errno set) is checked.
        let conn = unsafe { qb_ipcc_connect(cname.as_ptr(), max_msg_size) };
        if conn.is_null() {
            return Err(std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO));
        }
        Ok(Client { conn })
    }

    /// Sends one message, whose first bytes must be a request header giving its size.
    pub fn send(&self, msg: &[u8]) -> Result<usize, i32> {
        // SAFETY: conn is live (closed only in drop); msg is readable for its length.
        let rc = unsafe { qb_ipcc_send(self.conn, msg.as_ptr().cast(), msg.len()) };
        usize::try_from(rc).map_err(|_| -(rc as i32))
    }

    /// Receives one response of at most `max` bytes, waiting up to `timeout_ms`.
    pub fn recv_response(&self, max: usize, timeout_ms: i32) -> Result<Vec<u8>, i32> {
        self.recv(max, timeout_ms, false)
    }

    /// Receives one event of at most `max` bytes, waiting up to `timeout_ms`.
    pub fn recv_event(&self, max: usize, timeout_ms: i32) -> Result<Vec<u8>, i32> {
        self.recv(max, timeout_ms, true)
    }

    fn recv(&self, max: usize, timeout_ms: i32, event: bool) -> Result<Vec<u8>, i32> {
        let mut buf = vec![0u8; max];
        // SAFETY: conn is live; buf has max writable bytes and libqb writes at most that.
        let rc = unsafe {
            if event {
                qb_ipcc_event_recv(self.conn, buf.as_mut_ptr().cast(), max, timeout_ms)
            } else {
                qb_ipcc_recv(self.conn, buf.as_mut_ptr().cast(), max, timeout_ms)
            }
        };
        let n = usize::try_from(rc).map_err(|_| -(rc as i32))?;
        buf.truncate(n);
        Ok(buf)
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // SAFETY: conn came from qb_ipcc_connect and is disconnected exactly once, here.
        unsafe { qb_ipcc_disconnect(self.conn) };
    }
}
