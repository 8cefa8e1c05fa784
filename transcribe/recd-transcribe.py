"""recd-transcribe: recd's transcriber, Whisper through faster-whisper (CTranslate2), on the device.

recd starts it through `recd-media --transcriber` (which puts it at idle priority, ends it when recd dies
and shuts it in a Landlock sandbox that may read its own files and the system's, and write nothing), with
a socket as descriptor 3. It never opens a recording: recd decodes the sound (16 kHz mono, 16-bit) and
sends it. Frames are recd's worker frames (Sources/MediaWire/WorkerWire.swift, WireIO): a little-endian
u32 header length, a u32 payload length, the header (JSON), the payload (bytes).

  transcriber -> recd  {"ready": {"model": NAME}} once the model is loaded, or {"error": TEXT}
  recd -> transcriber  {"op": "append"} + PCM             (as many as the recording takes)
  recd -> transcriber  {"op": "transcribe"}               the sound appended so far, then forgotten
  transcriber -> recd  {"segment": {"start", "end", "text", "words": [{"word", "start", "end", "probability"}…]}}
                       for each segment as it is found, then {"done": {"language", "duration"}}
                       or {"error": TEXT}

It ends when recd closes the socket. Usage: recd-transcribe.py MODEL_DIR

With --voice-detector instead of a model (`recd-media --voice-detector DIR`), it is listening's voice
detector (issue 49): Silero VAD v6 (shipped inside faster-whisper, MIT licence) through ONNX Runtime,
not Whisper, at recd's own priority.

  detector -> recd  {"ready": {"model": "silero_vad_v6"}} once loaded, or {"error": TEXT}
  recd -> detector  {"op": "detect"} + PCM: 16 kHz mono S16, a multiple of 512 samples (32 ms windows)
  detector -> recd  {"speech": [p, ...]}: each window's speech probability (0...1), or {"error": TEXT}
  recd -> detector  {"op": "reset"}: the next sound does not follow the last (the model's state cleared)

The model is streamed: its recurrent state and the last 64 samples carry over from one call to the
next, so the probabilities are those of one long recording. About 0.07 ms of CPU per 32 ms window here
(0.2 % of a core).
The messages are recd's types `TranscriberWire.Request` and `.Reply` (Sources/MediaWorker/Transcriber.swift);
`recd-transcribe.py --protocol-samples` prints one of each this script sends, built by the functions
that send them, and the operations it reads: recd's TranscriberWireTests decodes them with those types.

The launcher's seccomp filter already refuses new sockets, signals to other processes, ptrace and
the like (WorkerSandbox.swift); it lets execve through, since that is how this process began.
Once the model is loaded, `refuse_exec` stacks a second filter that refuses execve too.
"""
import json
import os
import socket
import struct
import sys

os.environ["HF_HUB_OFFLINE"] = "1"   # the model is a directory: nothing is fetched, ever


# seccomp's numbers for this machine: (AUDIT_ARCH, execve, execveat, seccomp).
SECCOMP_ARCHES = {"x86_64": (0xC000003E, 59, 322, 317), "aarch64": (0xC00000B7, 221, 281, 277)}


def refuse_exec():
    """A seccomp filter, stacked on the launcher's: execve and execveat answer EPERM from now on, in
    every thread (TSYNC: the model's libraries started theirs already, and prctl's filter would cover
    only the calling thread)."""
    import ctypes
    arch = SECCOMP_ARCHES.get(os.uname().machine)
    if arch is None:
        return False
    audit, execve, execveat, seccomp = arch
    ld_arch, ld_nr = (0x20, 4), (0x20, 0)          # BPF_LD|BPF_W|BPF_ABS of seccomp_data.arch / .nr
    jeq, ret = 0x15, 0x06                          # BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K
    allow, eperm, kill = 0x7FFF0000, 0x00050000 | 1, 0x80000000
    program = [(ld_arch[0], 0, 0, ld_arch[1]), (jeq, 1, 0, audit), (ret, 0, 0, kill),
               # A jump counts from the next instruction: execve skips execveat's test, to EPERM.
               (ld_nr[0], 0, 0, ld_nr[1]), (jeq, 1, 0, execve), (jeq, 0, 1, execveat),
               (ret, 0, 0, eperm), (ret, 0, 0, allow)]

    class Instruction(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Instruction))]

    filters = (Instruction * len(program))(*[Instruction(*i) for i in program])
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    libc.syscall.argtypes = [ctypes.c_long, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_void_p]
    libc.prctl(38, 1, None, 0, 0)   # PR_SET_NO_NEW_PRIVS: already set by the launcher
    # seccomp(SECCOMP_SET_MODE_FILTER (1), SECCOMP_FILTER_FLAG_TSYNC (1), program): 0, or a thread's
    # id when one could not take it.
    return libc.syscall(seccomp, 1, 1, ctypes.addressof(Program(len(program), filters))) == 0


class stderr_silenced:
    """Descriptor 2 on /dev/null for the block (C libraries' writes too), then back."""

    def __enter__(self):
        sys.stderr.flush()
        self.saved = os.dup(2)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)

    def __exit__(self, *exc):
        os.dup2(self.saved, 2)
        os.close(self.saved)
        return False


def read_exactly(sock, n):
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(min(n - len(data), 1 << 20))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


def read_frame(sock):
    header_length, payload_length = struct.unpack("<II", read_exactly(sock, 8))
    return json.loads(read_exactly(sock, header_length)), read_exactly(sock, payload_length)


def send(sock, message):
    header = json.dumps(message, ensure_ascii=False).encode()
    sock.sendall(struct.pack("<II", len(header), 0) + header)


OPERATIONS = ("append", "transcribe")
VOICE_OPERATIONS = ("detect", "reset")
WINDOW = 512      # samples at 16 kHz: Silero v5/v6's window
CONTEXT = 64      # samples of the previous window the model sees before each


def ready_message(model_dir):
    return {"ready": {"model": os.path.basename(model_dir.rstrip("/"))}}


def segment_message(s):
    words = [{"word": w.word, "start": round(w.start, 3), "end": round(w.end, 3), "probability": round(w.probability, 3)}
             for w in (s.words or [])]
    return {"segment": {"start": round(s.start, 3), "end": round(s.end, 3), "text": s.text, "words": words}}


def done_message(info):
    return {"done": {"language": info.language, "duration": round(info.duration, 3)}}


def error_message(text):
    return {"error": text}


def protocol_samples():
    """The operations read, then one of each message sent, one JSON per line (see the docstring)."""
    from types import SimpleNamespace as Fake
    word = Fake(word=" Hello", start=0.0, end=0.4821, probability=0.91234)
    print(json.dumps({"operations": list(OPERATIONS)}))
    for message in (ready_message("/opt/recd/transcribe/models/base/"),
                    segment_message(Fake(start=0.0, end=0.4821, text=" Hello", words=[word])),
                    segment_message(Fake(start=1.0, end=2.0, text=" …", words=None)),
                    done_message(Fake(language="en", duration=2.5)),
                    error_message("could not load the model in /nowhere: it is not one")):
        print(json.dumps(message, ensure_ascii=False))


def transcribe(model, pcm):
    import ctranslate2
    import numpy
    # Whisper samples at a higher temperature when a window's text looks wrong (repeated, unlikely),
    # and CTranslate2's generator is seeded once per process: the same sound gave a different text
    # from job to job, and now and then none (a sampled window taken for silence). Seeded per job,
    # a recording gets the same transcript each time it is made.
    ctranslate2.set_random_seed(0)
    audio = numpy.frombuffer(pcm, dtype="<i2").astype(numpy.float32) / 32768.0
    # vad_filter: Whisper invents words in silence ("You" for 30 s of it); Silero's voice detection,
    # inside faster-whisper, hands it only the parts with speech.
    segments, info = model.transcribe(audio, word_timestamps=True, vad_filter=True, beam_size=5,
                                      condition_on_previous_text=False)
    for s in segments:
        yield segment_message(s)
    yield done_message(info)


class StreamingSilero:
    def __init__(self):
        import numpy
        import onnxruntime
        from faster_whisper.vad import get_assets_path
        self.np = numpy
        self.name = "silero_vad_v6"
        options = onnxruntime.SessionOptions()
        options.inter_op_num_threads = 1
        options.intra_op_num_threads = 1
        options.enable_cpu_mem_arena = False
        options.log_severity_level = 4
        self.session = onnxruntime.InferenceSession(os.path.join(get_assets_path(), self.name + ".onnx"),
                                                    providers=["CPUExecutionProvider"], sess_options=options)
        self.reset()

    def reset(self):
        np = self.np
        self.h = np.zeros((1, 1, 128), dtype=np.float32)
        self.c = np.zeros((1, 1, 128), dtype=np.float32)
        self.context = np.zeros(CONTEXT, dtype=np.float32)

    def probabilities(self, pcm):
        np = self.np
        audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
        if len(audio) == 0:
            return []
        windows = audio.reshape(-1, WINDOW)
        # Each window with the last 64 samples of the one before it (the previous call's for the first).
        before = np.concatenate([self.context[None, :], windows[:-1, -CONTEXT:]], 0)
        out, self.h, self.c = self.session.run(None, {"input": np.concatenate([before, windows], 1), "h": self.h, "c": self.c})
        self.context = windows[-1, -CONTEXT:].copy()
        return [round(float(p), 3) for p in out.reshape(-1)]


def detect_voice(sock):
    """The voice detector's loop (see the docstring)."""
    try:
        with stderr_silenced():
            import onnxruntime
            onnxruntime.set_default_logger_severity(3)
            model = StreamingSilero()
    except Exception as e:
        send(sock, error_message(f"could not load the voice detector: {e}"))
        return
    if not refuse_exec():
        print("recd-transcribe: execve stays allowed (no seccomp filter for this machine)", file=sys.stderr)
    send(sock, {"ready": {"model": model.name}})
    while True:
        try:
            header, payload = read_frame(sock)
        except (EOFError, ConnectionError):
            return
        op = header.get("op")
        if op == VOICE_OPERATIONS[0]:   # detect
            if len(payload) % (2 * WINDOW) != 0:
                send(sock, error_message(f"{len(payload)} bytes are not whole windows of {WINDOW} samples"))
                continue
            try:
                send(sock, {"speech": model.probabilities(payload)})
            except Exception as e:
                send(sock, error_message(f"{type(e).__name__}: {e}"))
        elif op == VOICE_OPERATIONS[1]:   # reset
            model.reset()
        else:
            send(sock, error_message(f"no operation {op!r}"))


def main():
    if sys.argv[1:] == ["--protocol-samples"]:
        return protocol_samples()
    if sys.argv[1:] == ["--voice-detector"]:
        return detect_voice(socket.socket(fileno=3))
    if len(sys.argv) != 2:
        sys.exit("recd-transcribe is started by recd itself (usage: recd-transcribe.py MODEL_DIR)")
    model_dir = sys.argv[1]
    sock = socket.socket(fileno=3)
    try:
        with stderr_silenced():
            # The voice detector's runtime writes warnings straight to descriptor 2 as it starts, in
            # ANSI colours and before any setting reaches it ("GPU device discovery failed", "Failed to
            # persist telemetry device ID": it sends nothing, the sandbox refuses it sockets). So its
            # start — the import and the detector's session, made now — runs with descriptor 2 on
            # /dev/null; errors still come as exceptions.
            import onnxruntime
            onnxruntime.set_default_logger_severity(3)
            from faster_whisper import WhisperModel
            from faster_whisper.vad import get_vad_model
            get_vad_model()
        model = WhisperModel(model_dir, device="cpu", compute_type="int8", cpu_threads=os.cpu_count() or 1)
    except Exception as e:  # a model directory that is not one, a package missing
        send(sock, error_message(f"could not load the model in {model_dir}: {e}"))
        return
    if not refuse_exec():
        print("recd-transcribe: execve stays allowed (no seccomp filter for this machine)", file=sys.stderr)
    send(sock, ready_message(model_dir))
    pcm = bytearray()
    while True:
        try:
            header, payload = read_frame(sock)
        except (EOFError, ConnectionError):
            return   # recd is done with us
        op = header.get("op")
        if op == OPERATIONS[0]:   # append
            pcm += payload
        elif op == OPERATIONS[1]:   # transcribe
            try:
                for message in transcribe(model, bytes(pcm)):
                    send(sock, message)
            except Exception as e:
                send(sock, error_message(f"{type(e).__name__}: {e}"))
            pcm = bytearray()
        else:
            send(sock, error_message(f"no operation {op!r}"))


if __name__ == "__main__":
    main()
