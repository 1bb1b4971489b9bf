package ddb

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/truora/minidyn/server"
)

// The endpoint comes from the environment only, as in a local run of a Lambda.
func TestNewClientFromEnvEndpoint(t *testing.T) {
	hs := httptest.NewServer(server.NewServer())
	defer hs.Close()
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", hs.URL)

	client, err := NewClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	o := client.Options()
	if aws.ToString(o.BaseEndpoint) != hs.URL {
		t.Errorf("BaseEndpoint = %q, want %q", aws.ToString(o.BaseEndpoint), hs.URL)
	}
	if !o.DisableValidateResponseChecksum {
		t.Error("response checksum validation not disabled for a local endpoint")
	}
	if o.Region != LocalRegion {
		t.Errorf("Region = %q, want %q", o.Region, LocalRegion)
	}
	creds, err := o.Credentials.Retrieve(context.Background())
	if err != nil || creds.AccessKeyID != LocalAccessKeyID {
		t.Errorf("credentials = %+v, %v; want static dummy ones", creds, err)
	}
	// A real round trip works against minidyn (no X-Amz-Crc32 header).
	if _, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("missing")}); err == nil {
		t.Error("DescribeTable of a missing table succeeded")
	} else if apiErrorCode(err) != "ResourceNotFoundException" {
		t.Errorf("DescribeTable error = %v, want ResourceNotFoundException", err)
	}
}

// Configured credentials and region are kept with an endpoint override.
func TestNewClientKeepsConfiguredCredentials(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDREAL")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "eu-west-1")
	client, err := NewClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	o := client.Options()
	creds, err := o.Credentials.Retrieve(context.Background())
	if err != nil || creds.AccessKeyID != "AKIDREAL" {
		t.Errorf("credentials = %+v, %v; want the environment's", creds, err)
	}
	if o.Region != "eu-west-1" {
		t.Errorf("Region = %q", o.Region)
	}
}

// An option setting Credentials explicitly wins over the dummy defaults.
func TestNewClientExplicitCredentialsOption(t *testing.T) {
	client, err := NewClient(context.Background(), func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String("http://127.0.0.1:1")
		o.Credentials = credentials.NewStaticCredentialsProvider("mine", "x", "")
	})
	if err != nil {
		t.Fatal(err)
	}
	creds, _ := client.Options().Credentials.Retrieve(context.Background())
	if creds.AccessKeyID != "mine" {
		t.Errorf("AccessKeyID = %q, want mine", creds.AccessKeyID)
	}
}

// Without an override nothing is changed: production keeps checksum
// validation and the default credential chain.
func TestNewClientWithoutOverride(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	client, err := NewClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	o := client.Options()
	if o.BaseEndpoint != nil {
		t.Errorf("BaseEndpoint = %q", *o.BaseEndpoint)
	}
	if o.DisableValidateResponseChecksum {
		t.Error("checksum validation disabled without an endpoint override")
	}
	if _, ok := o.Credentials.(credentials.StaticCredentialsProvider); ok {
		t.Error("static credentials installed without an endpoint override")
	}
}
