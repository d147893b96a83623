#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "tests/support/temp_dir.h"
#include "tests/viz/viz_testing.h"
#include "viz/png.h"

using namespace gf::viz;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;
using gf::testing::TempDir;

namespace {

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

uint32_t big_endian(const std::vector<uint8_t>& bytes, size_t at) {
  return uint32_t{bytes[at]} << 24 | uint32_t{bytes[at + 1]} << 16 | uint32_t{bytes[at + 2]} << 8 |
         uint32_t{bytes[at + 3]};
}

}  // namespace

TEST_CASE("an image stores pixels and clips drawing at its edges", "[viz][png]") {
  Image image(5, 3, Rgb{10, 20, 30});
  CHECK(image.width() == 5);
  CHECK(image.height() == 3);
  CHECK(image.at(4, 2) == Rgb{10, 20, 30});
  image.set(1, 2, Rgb{1, 2, 3});
  CHECK(image.at(1, 2) == Rgb{1, 2, 3});
  CHECK(image.data()[(2 * 5 + 1) * 3 + 2] == 3);  // row-major r, g, b
  image.set(-1, 0, kBlack);                       // outside: ignored
  image.set(5, 0, kBlack);
  image.fill_rect(3, 1, 10, 10, kBlack);  // runs off the bottom-right corner
  CHECK(image.at(3, 1) == kBlack);
  CHECK(image.at(4, 2) == kBlack);
  CHECK(image.at(2, 1) == Rgb{10, 20, 30});
  REQUIRE_THROWS_WITH(image.at(5, 0), Contains("image: pixel (5, 0) is outside the 5 x 3 image"));
  REQUIRE_THROWS_WITH(Image(0, 10), Contains("image: size 0 x 10 is empty"));
  REQUIRE_THROWS_AS(Image(100000, 10), std::invalid_argument);
}

TEST_CASE("blit copies an image into another, blend and mix interpolate", "[viz][png]") {
  Image small(2, 2, Rgb{200, 0, 0});
  small.set(1, 1, Rgb{0, 0, 200});
  Image big(4, 4);
  big.blit(small, 1, 2);
  CHECK(big.at(1, 2) == Rgb{200, 0, 0});
  CHECK(big.at(2, 3) == Rgb{0, 0, 200});
  CHECK(big.at(0, 2) == kWhite);
  big.blit(small, 3, 3);  // mostly outside: clipped
  CHECK(big.at(3, 3) == Rgb{200, 0, 0});

  CHECK(mix(kBlack, kWhite, 0.0f) == kBlack);
  CHECK(mix(kBlack, kWhite, 1.0f) == kWhite);
  CHECK(mix(Rgb{0, 100, 200}, Rgb{100, 200, 0}, 0.5f) == Rgb{50, 150, 100});
  Image canvas(1, 1, kWhite);
  canvas.blend(0, 0, kBlack, 0.25f);
  CHECK(canvas.at(0, 0) == Rgb{191, 191, 191});
}

TEST_CASE("write_png writes a PNG whose header holds the image size", "[viz][png]") {
  const TempDir dir("viz");
  const fs::path path = dir / "nested" / "picture.png";  // parents do not exist yet
  Image image(37, 21, Rgb{12, 34, 56});
  write_png(image, path.string());
  const std::vector<uint8_t> bytes = read_bytes(path);
  REQUIRE(bytes.size() > 33);
  const std::vector<uint8_t> signature = {137, 80, 78, 71, 13, 10, 26, 10};
  CHECK(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 8) == signature);
  CHECK(big_endian(bytes, 8) == 13);  // IHDR's length
  CHECK(std::string(bytes.begin() + 12, bytes.begin() + 16) == "IHDR");
  CHECK(big_endian(bytes, 16) == 37);  // width
  CHECK(big_endian(bytes, 20) == 21);  // height
  CHECK(bytes[24] == 8);               // bits per channel
  CHECK(bytes[25] == 2);               // colour type 2: RGB
  CHECK(bytes == encode_png(image));

  // Overwriting replaces the file and leaves no temporary behind.
  write_png(Image(3, 4), path.string());
  CHECK(big_endian(read_bytes(path), 16) == 3);
  CHECK(std::distance(fs::directory_iterator(path.parent_path()), fs::directory_iterator()) == 1);
}

TEST_CASE("write_png to an impossible path throws with the path in the message", "[viz][png]") {
  const TempDir dir("viz");
  const fs::path file = dir / "file";
  std::ofstream(file) << "not a directory";
  const std::string path = (file / "x.png").string();  // a directory inside a regular file
  REQUIRE_THROWS_WITH(write_png(Image(2, 2), path), Contains("png: cannot write " + path + ": "));
  REQUIRE_THROWS_WITH(write_png(Image(2, 2), ""),
                      Contains("png: cannot write : the path is empty"));
}
