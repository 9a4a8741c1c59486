// The dragoman binary: registers the subcommands, sets up logging, runs the chosen command and
// turns errors into messages and exit codes (0 ok, 1 error, 2 usage error). Every error is printed
// as "error: MESSAGE"; a usage error adds a line naming the help to read.
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "base/spelling.h"
#include "cli/commands.h"
#include "cli/log_sink.h"
#include "cli/stop_signal.h"
#include "core/allocator.h"
#include "device/cpu/cpu_isa.h"
#include "ops/build_info.h"

namespace {

using dragoman::cli::Subcommand;

// The first argument that is neither an option nor the value of --log-level (the one global
// option with a value): the subcommand's name, or "" when there is none.
std::string subcommand_argument(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--log-level") {
      ++i;
    } else if (arg.empty() || arg.front() != '-') {
      return std::string(arg);
    }
  }
  return "";
}

// "average-checkpoints, build-vocab, ...".
std::string subcommand_list(const std::vector<Subcommand>& commands) {
  std::string all;
  for (const Subcommand& command : commands) all += (all.empty() ? "" : ", ") + command.app->get_name();
  return all;
}

// "unknown subcommand 'trian'; did you mean 'train'?", or the list of subcommands when none is
// close (base/spelling.h).
std::string unknown_subcommand_message(const std::string& name, const std::vector<Subcommand>& commands) {
  std::vector<std::string> names;
  for (const Subcommand& command : commands) names.push_back(command.app->get_name());
  const std::string nearest = dragoman::nearest_name(name, names);
  const std::string message = "unknown subcommand '" + name + "'";
  return nearest.empty() ? message + " (expected one of: " + subcommand_list(commands) + ")"
                         : message + "; did you mean '" + nearest + "'?";
}

// CLI11's "The following argument was not expected: small.en" with what the user most likely
// meant: an unknown option is named with the subcommand's nearest ("--beem": --beam); the
// subcommands take their files with options, so a file given bare was meant for one (translate -m
// model small.en: the input; score-bleu takes its hypotheses with -i too).
std::string unexpected_arguments_message(const CLI::App& app, const std::string& what) {
  const auto chosen = app.get_subcommands();
  const std::vector<std::string> extras = app.remaining();
  if (chosen.empty() || extras.empty()) return what;
  const CLI::App& sub = *chosen.front();
  // An unknown option first (its value, if any, follows it as a bare argument): the nearest of the
  // subcommand's own, when one is close.
  for (const std::string& extra : extras) {
    if (extra.size() < 2 || extra.front() != '-') continue;
    const std::string typed = extra.substr(0, extra.find('='));
    std::vector<std::string> names;
    for (const CLI::Option* option : sub.get_options()) {
      for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    }
    const std::string nearest = dragoman::nearest_name(typed, names);
    return what + "; " + sub.get_name() + " has no option " + typed +
           (nearest.empty() ? " (see its --help)" : "; did you mean " + nearest + "?");
  }
  const std::string& extra = extras.front();
  if (sub.get_option_no_throw("--input") != nullptr) {
    return what + "; did you mean -i " + extra + "? (" + sub.get_name() + " reads its input with --input/-i)";
  }
  return what + "; " + sub.get_name() + " takes no bare arguments: give '" + extra + "' with its option" +
         (sub.get_option_no_throw("--model") != nullptr ? " (a second model is a second -m)" : "");
}

// A usage error: "error: MESSAGE" and the help to read (the subcommand's, once one is chosen).
int usage_error(const CLI::App& app, const std::string& message) {
  const auto chosen = app.get_subcommands();
  const std::string command = chosen.empty() ? "dragoman" : "dragoman " + chosen.front()->get_name();
  std::fprintf(stderr, "error: %s\nRun '%s --help' for more information.\n", message.c_str(), command.c_str());
  return 2;
}

// OpenMP threads that wait at a barrier spin first (libgomp: 300,000 rounds, about a millisecond)
// and only then sleep. On a machine where another program keeps a core busy, translate's team
// keeps waiting for a thread that is not running while its spinning partner takes the core: 200
// lines of the demo model took 2-33 s beside a training run instead of 0.3 s. With 1,000 rounds
// (what libgomp itself uses once threads outnumber cores) they took 0.7-0.8 s, and alone no
// measurable time is lost; a passive wait lost 10-65 % alone (docs/PERFORMANCE.md, "translate
// beside other work"). libgomp reads GOMP_SPINCOUNT when it loads, before main, so setting it here
// is too late for this process: translate runs itself again with the variable set. Only when the
// user set neither GOMP_SPINCOUNT nor OMP_WAIT_POLICY (theirs win), at most once (the new process
// finds it set), and if the exec fails translate simply goes on with libgomp's defaults.
void use_short_openmp_spins(char** argv) {
  if (std::getenv("GOMP_SPINCOUNT") != nullptr || std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (::setenv("GOMP_SPINCOUNT", "1000", 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  ::unsetenv("GOMP_SPINCOUNT");  // still here: the exec failed; nothing else changed
}

}  // namespace

int main(int argc, char** argv) {
  // The CPU kernels' instruction-set level, chosen once: a bad DRAGOMAN_CPU_ISA stops here, before
  // any work (device/cpu/cpu_isa.h).
  try {
    dragoman::cpu::active_cpu_isa();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  // Named "dragoman" (not argv[0]): the usage line is the command a user types, wherever the binary is.
  CLI::App app{"Dragoman: the Transformer of \"Attention Is All You Need\", trained and served by one binary",
               "dragoman"};
  app.require_subcommand(1);
  // Options of dragoman itself (--log-level, --quiet) are accepted after the subcommand too: the
  // subcommands inherit fallthrough and hand options they do not know to their parent.
  app.fallthrough();
  app.set_version_flag("--version", [] {
    std::string info = dragoman::ops::build_info();
    info.pop_back();  // CLI11 adds the final newline
    return info;
  });
  std::string log_level = "info";
  CLI::Option* log_level_option =
      app.add_option("--log-level", log_level, "Log level on standard error (before or after the subcommand)")
          ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
          ->capture_default_str();
  bool quiet = false;
  app.add_flag("--quiet,-q", quiet, "Log only warnings and errors (the same as --log-level warn)")
      ->excludes(log_level_option);

  const std::vector<Subcommand> commands = {
      dragoman::cli::add_average_checkpoints(app),
      dragoman::cli::add_build_shortlist(app),
      dragoman::cli::add_build_vocab(app),
      dragoman::cli::add_convert(app),
      dragoman::cli::add_decoding_defaults(app),
      dragoman::cli::add_score(app),
      dragoman::cli::add_score_bleu(app),
      dragoman::cli::add_serve(app),
      dragoman::cli::add_train(app),
      dragoman::cli::add_translate(app),
  };

  const std::string name = subcommand_argument(argc, argv);
  if (!name.empty() &&
      std::none_of(commands.begin(), commands.end(), [&](const Subcommand& c) { return c.app->get_name() == name; })) {
    return usage_error(app, unknown_subcommand_message(name, commands));
  }
  if (name == "translate" || name == "score") use_short_openmp_spins(argv);  // score decodes as translate
  // Before any other thread exists (after the re-exec above, which would keep the signal mask):
  // SIGINT and SIGTERM go to one thread of our own, never to a thread doing work (cli/stop_signal.h).
  dragoman::cli::start_signal_thread();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    if (e.get_name() == "RequiredError" && app.get_subcommands().empty()) {
      return usage_error(app, "a subcommand is required (one of: " + subcommand_list(commands) + ")");
    }
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
      return usage_error(app, unexpected_arguments_message(app, e.what()));
    }
    return usage_error(app, e.what());
  }

  auto logger = std::make_shared<spdlog::logger>("dragoman", std::make_shared<dragoman::cli::StderrLogSink>());
  logger->set_pattern("[%Y-%m-%d %H:%M:%S] %^%l%$: %v");
  logger->set_level(quiet ? spdlog::level::warn : spdlog::level::from_str(log_level));
  spdlog::set_default_logger(logger);

  // The command's tensors are gone once it returns: release_all() then gives the allocators' caches
  // and the CUDA contexts back, and throws a CUDA error that a destructor could only record, so it
  // is printed like any other. On the error paths it runs too, its own errors ignored.
  const auto release_after_error = [] {
    try {
      dragoman::release_all();
    } catch (...) {
    }
  };
  try {
    int code = 0;
    for (const auto& command : commands) {
      if (command.app->parsed()) {
        code = command.run();
        break;
      }
    }
    dragoman::release_all();
    return code;
  } catch (const CLI::ParseError& e) {  // usage errors found once the options are combined
    release_after_error();
    return usage_error(app, e.what());
  } catch (const std::bad_alloc&) {
    release_after_error();
    std::fprintf(stderr, "error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    release_after_error();
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
