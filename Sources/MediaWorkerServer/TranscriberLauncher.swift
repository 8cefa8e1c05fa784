// `recd-media PARENT_PID --transcriber DIR MODEL [idle|normal]`: how recd starts its transcriber (transcribe/,
// Python: faster-whisper). This process sets up what the media workers have — death with recd, idle
// priority, a Landlock sandbox — and then becomes the transcriber by exec: all three survive exec,
// so the Python process, which cannot set them up itself, runs inside them. The socket on
// descriptor 3 passes through.
import CProcessShim
import Foundation

public enum TranscriberLauncher {
    /// Never returns: execs the transcriber, or exits with a message on stderr (recd's log).
    public static func run(arguments: [String]) -> Never {
        guard arguments.count == 3 || arguments.count == 4 && ["idle", "normal"].contains(arguments[3]),
              let parent = pid_t(arguments[0]), fcntl(3, F_GETFD) >= 0 else {
            fail("--transcriber is started by recd itself (PARENT_PID --transcriber DIR MODEL [idle|normal], its socket on descriptor 3)", code: 64)
        }
        let dir = arguments[1], model = arguments[2], idle = arguments.count == 3 || arguments[3] == "idle"
        enter(parent: parent, idle: idle, dir: dir)
        // -I: no PYTHON* variables, no user site, no current directory on the path; -B: no .pyc
        // written (the sandbox would refuse it anyway).
        exec(dir: dir, ["-I", "-B", dir + "/recd-transcribe.py", dir + "/models/" + model])
    }

    /// `recd-media PARENT_PID --voice-detector DIR`: listening's voice detector (transcribe/recd-transcribe.py --voice-detector,
    /// Silero VAD), from the transcriber's environment, in the same sandbox. At recd's own priority,
    /// not idle: listening must keep up with the microphone (it costs about 0.2 % of a core).
    public static func runVoiceDetector(arguments: [String]) -> Never {
        guard arguments.count == 2, let parent = pid_t(arguments[0]), fcntl(3, F_GETFD) >= 0 else {
            fail("--voice-detector is started by recd itself (PARENT_PID --voice-detector DIR, its socket on descriptor 3)", code: 64)
        }
        let dir = arguments[1]
        enter(parent: parent, idle: false, dir: dir)
        exec(dir: dir, ["-I", "-B", dir + "/recd-transcribe.py", "--voice-detector"])
    }

    /// What the media workers have, set up before the exec (all of it survives exec): death with recd,
    /// idle priority when asked, the sandbox.
    private static func enter(parent: pid_t, idle: Bool, dir: String) {
        _ = recd_set_parent_death_signal(SIGKILL)
        if getppid() != parent { _exit(0) }
        // SCHED_IDLE (5 on Linux), inherited by every thread CTranslate2 starts: transcripts use only
        // CPU time nothing else wants, so a take or a playback never waits for one. `normal`
        // (--transcribe-priority): a machine never idle would otherwise never make a transcript.
        if idle {
            var param = sched_param(sched_priority: 0)
            if sched_setscheduler(0, 5, &param) != 0 { _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19) }
        }
        do {
            try WorkerSandbox.enter(writable: ["/dev/null"], readable: readable(dir))
        } catch WorkerSandbox.Failure.unsupported {
            // recd logs the kernel's lack of Landlock once, for the media workers and this alike.
        } catch {
            fail("\(error)", code: 70)
        }
        // execve stays allowed for the exec below; the transcriber refuses it itself once its model
        // is loaded (a second filter, stacked: recd-transcribe.py's refuse_exec).
        do { try WorkerSandbox.refuseBeyondFiles(allowExec: true) } catch {
            guard case .unsupportedSeccomp = error else { fail("\(error)", code: 70) }
            FileHandle.standardError.write(Data("recd-media: the transcriber: \(error)\n".utf8))
        }
    }

    private static func exec(dir: String, _ arguments: [String]) -> Never {
        let python = dir + "/venv/bin/python3"
        var cArgs: [UnsafeMutablePointer<CChar>?] = ([python] + arguments).map { strdup($0) } + [nil]
        execv(python, &cArgs)
        fail("could not start \(python): \(String(cString: strerror(errno)))", code: 127)
    }

    /// What the transcriber may read: its own folder (venv, model, script), the system's programs and
    /// libraries (Debian's python3 and its standard library, the C libraries), the loader's cache, its
    /// own /proc entries and the CPU's description (CTranslate2 and ONNX Runtime size their thread
    /// pools by them). Nothing of recd's data: the sound comes over the socket.
    static func readable(_ dir: String) -> [String] {
        [dir, "/usr", "/etc/ld.so.cache", "/etc/localtime", "/proc/self", "/proc/cpuinfo", "/sys/devices/system/cpu", "/sys/fs/cgroup", "/dev/urandom"]
    }

    private static func fail(_ message: String, code: Int32) -> Never {
        FileHandle.standardError.write(Data("recd-media: \(message)\n".utf8))
        exit(code)
    }
}
