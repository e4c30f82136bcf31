//! Hooks for the robustness tests only, reachable from every driving loop. Unset, they do
//! nothing.

/// `RECLAIM_TEST_PANIC=loop` panics in the driving loop (of `run`, `prove` or the dashboard)
/// once `ready` (for `run`: a worker is running and has written a row); `RECLAIM_TEST_PANIC=thread`
/// panics in a thread of its own.
///
/// # Panics
///
/// On purpose, and only when `RECLAIM_TEST_PANIC=loop` is set.
pub fn panic_point(ready: bool) {
    static WHERE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    static FIRED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let Some(place) = WHERE.get_or_init(|| std::env::var("RECLAIM_TEST_PANIC").ok()) else {
        return;
    };
    if !ready || FIRED.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    match place.as_str() {
        "loop" => panic!("RECLAIM_TEST_PANIC=loop: a panic in the driving loop"),
        "thread" => {
            let _ = std::thread::Builder::new()
                .name("reclaim-test-panic".into())
                .spawn(|| panic!("RECLAIM_TEST_PANIC=thread: a panic in another thread"));
        }
        _ => {}
    }
}
