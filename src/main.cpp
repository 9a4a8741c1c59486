// The dragoman binary: registers the subcommands, sets up logging, runs the chosen command and
// turns errors into messages and exit codes (0 ok, 1 error, 2 usage error).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <new>
#include <vector>

#include "cli/commands.h"
#include "core/build_info.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"Dragoman: the Transformer of \"Attention Is All You Need\", trained and served by one binary"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] {
    std::string info = dragoman::build_info();
    info.pop_back();  // CLI11 adds the final newline
    return info;
  });
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "Log level on standard error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();

  const std::vector<dragoman::cli::Subcommand> commands = {
      dragoman::cli::add_average_checkpoints(app),
      dragoman::cli::add_build_vocab(app),
      dragoman::cli::add_score_bleu(app),
      dragoman::cli::add_train(app),
      dragoman::cli::add_translate(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help/version (code 0) or the usage error
    return code == 0 ? 0 : 2;
  }

  auto logger = spdlog::stderr_color_mt("dragoman");
  logger->set_pattern("[%Y-%m-%d %H:%M:%S] %^%l%$: %v");
  logger->set_level(spdlog::level::from_str(log_level));
  spdlog::set_default_logger(logger);

  try {
    for (const auto& command : commands) {
      if (command.app->parsed()) return command.run();
    }
  } catch (const CLI::ParseError& e) {  // usage errors found once the options are combined
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
