#include <catch2/catch.hpp>
#include <cstdlib>

#include "base/env_choice.h"
#include "base/error.h"

using namespace dragoman;

namespace {
constexpr const char* kVariable = "DRAGOMAN_TEST_ENV_CHOICE";
}

TEST_CASE("EnvChoice: unset or empty is the first choice, a name its index, read once", "[core]") {
  ::unsetenv(kVariable);
  EnvChoice unset(kVariable, {"auto", "naive", "tiled"});
  CHECK(unset.get() == 0);
  ::setenv(kVariable, "", 1);
  EnvChoice empty(kVariable, {"auto", "naive", "tiled"});
  CHECK(empty.get() == 0);
  ::setenv(kVariable, "tiled", 1);
  EnvChoice named(kVariable, {"auto", "naive", "tiled"});
  CHECK(named.get() == 2);
  ::setenv(kVariable, "naive", 1);
  CHECK(named.get() == 2);  // read once: a later change of the variable is not seen
  named.set(1);
  CHECK(named.get() == 1);
  named.set(0);
  CHECK(named.get() == 0);
  CHECK_THROWS_WITH(named.set(3), Catch::Contains(kVariable) && Catch::Contains("no choice 3"));
  CHECK_THROWS_AS(named.set(-1), Error);
  CHECK(named.get() == 0);
  ::unsetenv(kVariable);
}

TEST_CASE("EnvChoice: another value is an error naming the variable, the value and the choices", "[core]") {
  ::setenv(kVariable, "Tiled", 1);
  EnvChoice choice(kVariable, {"auto", "naive", "tiled", "mma"});
  CHECK_THROWS_WITH(choice.get(), std::string(kVariable) + " is 'Tiled': expected auto, naive, tiled or mma");
  CHECK_THROWS_AS(choice.get(), Error);  // every call, until set()
  choice.set(3);
  CHECK(choice.get() == 3);
  EnvChoice two(kVariable, {"auto", "off"});
  CHECK_THROWS_WITH(two.get(), std::string(kVariable) + " is 'Tiled': expected auto or off");
  ::unsetenv(kVariable);
}
